// `crm-sync schema --dbt`: the mirror as dbt sources (a `sources.yml`, version 2), from the data
// dictionary: sources crm and reservations with every table and column, crm_live and
// reservations_live with the live views, and history with the history views. With accounts
// (`--accounts`, ACCOUNTS_FILE), those five sources per account, named as its schemas (crm_north, ...);
// the union models over them are in ./dbt-union.ts. Written without a YAML library: names are plain
// identifiers, every other text a double-quoted JSON string, which YAML reads as it is.

import { accountSchemas } from '../../store/account-schemas.ts'
import { HISTORY_SCHEMA_TEXT, historyViews } from './history.ts'
import {
  type DictionaryColumn,
  liveSchema,
  liveSchemaDescription,
  liveViews,
  MIRROR_SCHEMAS,
  type MirrorSchema,
  mirrorTables,
  RESERVED_WORD_ALIASES,
  SCHEMA_DESCRIPTIONS,
} from './index.ts'

const PLAIN = /^[a-z_][a-z0-9_]*$/
// Words YAML 1.1 readers take for booleans or null.
const SPECIAL = new Set(['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null'])

/** A name in YAML: plain when it may be, else quoted. */
export const name = (text: string): string =>
  PLAIN.test(text) && !SPECIAL.has(text) ? text : JSON.stringify(text)
/** Any other text in YAML: a double-quoted string. */
export const quoted = (text: string): string => JSON.stringify(text)

interface SourceTable {
  name: string
  description: string
  columns: readonly DictionaryColumn[]
}

/** A column's entry, its `- name:` line indented by `indent` spaces (sources: 10, models: 6). */
export function column(entry: DictionaryColumn, indent = 10): string[] {
  const at = ' '.repeat(indent)
  return [
    `${at}- name: ${name(entry.name)}`,
    `${at}  description: ${quoted(entry.description)}`,
    `${at}  data_type: ${entry.type}`,
    // dbt quotes the name in the SQL it writes for the column (tests, docs): a reserved word needs it.
    ...(entry.name in RESERVED_WORD_ALIASES ? [`${at}  quote: true`] : []),
  ]
}

function source(schema: string, description: string, tables: readonly SourceTable[]): string[] {
  return [
    `  - name: ${name(schema)}`,
    `    schema: ${name(schema)}`,
    '    loader: crm-sync',
    `    description: ${quoted(description)}`,
    '    tables:',
    ...tables.flatMap((table) => [
      `      - name: ${name(table.name)}`,
      `        description: ${quoted(table.description)}`,
      '        columns:',
      ...table.columns.flatMap((entry) => column(entry)),
    ]),
  ]
}

const tablesOf = (schema: MirrorSchema): SourceTable[] =>
  mirrorTables
    .filter((table) => table.schema === schema)
    .map((table) => ({ name: table.table, description: table.description, columns: table.columns }))

const viewsOf = (schema: MirrorSchema): SourceTable[] =>
  liveViews
    .filter((view) => view.schema === liveSchema(schema))
    .map((view) => ({ name: view.name, description: view.description, columns: view.columns }))

/** The five sources of one account, each named as its schema; `null`: crm, reservations, ... */
function accountSources(account: string | null): string[] {
  const schemas = accountSchemas(account)
  const about = (text: string) => (account === null ? text : `Account ${account}. ${text}`)
  return [
    ...MIRROR_SCHEMAS.flatMap((schema) =>
      source(schemas[schema], about(SCHEMA_DESCRIPTIONS[schema]), tablesOf(schema)),
    ),
    ...MIRROR_SCHEMAS.flatMap((schema) =>
      source(schemas[`${schema}_live`], about(liveSchemaDescription(schema)), viewsOf(schema)),
    ),
    ...source(schemas.history, about(HISTORY_SCHEMA_TEXT), historyViews),
  ]
}

const HEADER = [
  '# dbt sources of the crm-sync mirror, written by `crm-sync schema --dbt` from its data dictionary:',
  '# write it again after an upgrade of crm-sync. Sources crm and reservations are the tables (deleted',
  '# records stay, with _deleted_at set); crm_live and reservations_live are views of the live rows;',
  '# history has a view per main table with every version of its records.',
]

const accountsHeader = (accounts: readonly string[]) => [
  '# dbt sources of the crm-sync mirror, written by `crm-sync schema --dbt` from its data dictionary:',
  '# write it again after an upgrade of crm-sync, or when the accounts change. Per account (north):',
  '# crm_north and reservations_north are the tables (deleted records stay, with _deleted_at set);',
  '# crm_north_live and reservations_north_live are views of the live rows; history_north has a view',
  '# per main table with every version of its records.',
  `# Accounts: ${accounts.join(', ')}.`,
]

/**
 * The text of `sources.yml`: without accounts, the sources of the one account of a deployment without
 * ACCOUNTS_FILE (crm, reservations, ...); with accounts (in the order given), each one's.
 */
export function dbtSources(accounts: readonly string[] = []): string {
  const lines = [
    ...(accounts.length === 0 ? HEADER : accountsHeader(accounts)),
    'version: 2',
    '',
    'sources:',
    ...(accounts.length === 0 ? accountSources(null) : accounts.flatMap(accountSources)),
  ]
  return `${lines.join('\n')}\n`
}
