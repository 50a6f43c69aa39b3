// `crm-sync schema --dbt`: the mirror as dbt sources (a `sources.yml`, version 2), from the data
// dictionary: sources crm and reservations with every table and column, crm_live and
// reservations_live with the live views, and history with the history views. Written without a YAML library (the image has none): names are
// plain identifiers, every other text a double-quoted JSON string, which YAML reads as it is.

import { HISTORY_SCHEMA, HISTORY_SCHEMA_TEXT, historyViews } from './history.ts'
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

const name = (text: string): string => (PLAIN.test(text) && !SPECIAL.has(text) ? text : JSON.stringify(text))
const quoted = (text: string): string => JSON.stringify(text)

interface SourceTable {
  name: string
  description: string
  columns: readonly DictionaryColumn[]
}

function column(entry: DictionaryColumn): string[] {
  return [
    `          - name: ${name(entry.name)}`,
    `            description: ${quoted(entry.description)}`,
    `            data_type: ${entry.type}`,
    // dbt quotes the name in the SQL it writes for the column (tests, docs): a reserved word needs it.
    ...(entry.name in RESERVED_WORD_ALIASES ? ['            quote: true'] : []),
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
      ...table.columns.flatMap(column),
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

/** The text of `sources.yml`. */
export function dbtSources(): string {
  const lines = [
    '# dbt sources of the crm-sync mirror, written by `crm-sync schema --dbt` from its data dictionary:',
    '# write it again after an upgrade of crm-sync. Sources crm and reservations are the tables (deleted',
    '# records stay, with _deleted_at set); crm_live and reservations_live are views of the live rows;',
    '# history has a view per main table with every version of its records.',
    'version: 2',
    '',
    'sources:',
    ...MIRROR_SCHEMAS.flatMap((schema) => source(schema, SCHEMA_DESCRIPTIONS[schema], tablesOf(schema))),
    ...MIRROR_SCHEMAS.flatMap((schema) =>
      source(liveSchema(schema), liveSchemaDescription(schema), viewsOf(schema)),
    ),
    ...source(HISTORY_SCHEMA, HISTORY_SCHEMA_TEXT, historyViews),
  ]
  return `${lines.join('\n')}\n`
}
