// `crm-sync schema --dbt` with accounts: a dbt model per mirror table that unions the accounts' tables
// (`crm_north.people`, `crm_south.people`, ...) into one, with a column `source_relation` naming the
// account of each row, as Fivetran's dbt packages union the schemas of several connectors. Each model
// selects the dictionary's columns by name, not `*`: the columns of two accounts line up even where a
// loader put them in another order, and a column an account lacks (not yet migrated) is an error, not
// a value in the wrong column. Plain SQL but for dbt's `source()` and `adapter.quote()`, so that the
// models run on any warehouse the mirror is loaded into.
import { column, name, quoted } from './dbt.ts'
import { type DictionaryColumn, type DictionaryTable, mirrorTables, RESERVED_WORD_ALIASES } from './index.ts'

/** The first line of every model: how a later `--output` knows a model file as its own. */
export const MODEL_HEADER = '-- A union model of crm-sync, written by `crm-sync schema --dbt` with accounts.'

export interface UnionModel {
  /** `crm__people`: the model's name, and its file's without `.sql`. */
  name: string
  of: DictionaryTable
  sql: string
}

const modelName = (table: DictionaryTable): string => `${table.schema}__${table.table}`

/** The account's source of a mirror schema: `crm_north`. */
const sourceName = (account: string, table: DictionaryTable): string => `${table.schema}_${account}`

const selected = (entry: DictionaryColumn): string =>
  entry.name in RESERVED_WORD_ALIASES ? `{{ adapter.quote('${entry.name}') }}` : entry.name

function unionSql(table: DictionaryTable, accounts: readonly string[]): string {
  const selects = accounts.map((account) =>
    [
      'select',
      `  '${account}' as source_relation,`,
      ...table.columns.map(
        (entry, index) => `  ${selected(entry)}${index < table.columns.length - 1 ? ',' : ''}`,
      ),
      `from {{ source('${sourceName(account, table)}', '${table.table}') }}`,
    ].join('\n'),
  )
  return [
    MODEL_HEADER,
    `-- The rows of ${table.name} of accounts ${accounts.join(', ')}; source_relation names the account.`,
    '-- Write it again after an upgrade of crm-sync, or when the accounts change.',
    selects.join('\nunion all\n'),
    '',
  ].join('\n')
}

/** A model per mirror table (main, child and member tables), in the dictionary's order. */
export function unionModels(accounts: readonly string[]): UnionModel[] {
  return mirrorTables.map((table) => ({ name: modelName(table), of: table, sql: unionSql(table, accounts) }))
}

/** The `source_relation` column every union model starts with. */
const sourceRelationColumn = (accounts: readonly string[]): DictionaryColumn => ({
  name: 'source_relation',
  type: 'text',
  description: `The account the row is from, its name in ACCOUNTS_FILE: ${accounts.join(', ')}.`,
})

/** The text of the models' properties (`schema.yml`): each model's description and columns. */
export function unionModelProperties(accounts: readonly string[]): string {
  const sources = (table: DictionaryTable) => accounts.map((account) => sourceName(account, table)).join(', ')
  const lines = [
    '# The union models of crm-sync, written by `crm-sync schema --dbt` with accounts: each mirror table',
    '# of every account, with source_relation naming the account. Write it again after an upgrade of',
    '# crm-sync, or when the accounts change.',
    'version: 2',
    '',
    'models:',
    ...unionModels(accounts).flatMap(({ name: model, of: table }) => [
      `  - name: ${name(model)}`,
      `    description: ${quoted(`The rows of ${table.name} of every account (sources ${sources(table)}), source_relation naming the account. ${table.description}`)}`,
      '    columns:',
      ...[sourceRelationColumn(accounts), ...table.columns].flatMap((entry) => column(entry, 6)),
    ]),
  ]
  return `${lines.join('\n')}\n`
}
