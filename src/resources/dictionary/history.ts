// Schema history (kept by src/store/history.ts) in the data dictionary: one view per main table,
// history.crm_people for crm.people, with the main table's columns as a version holds them, then
// _valid_from, _valid_to and _deleted. The comments in the database and the dbt source `history` are
// written from here.
import { type DictionaryColumn, type DictionaryTable, mirrorTables } from './index.ts'

export const HISTORY_SCHEMA = 'history'

/** What the columns history adds mean, and the engine columns whose meaning differs in a version. */
export const HISTORY_COLUMN_TEXTS: Readonly<Record<string, string>> = {
  _synced_at: 'When crm-sync wrote this version.',
  _deleted_at:
    'Null in a live version; in a tombstone, when the record was found deleted upstream (or its own ' +
    'deletion mark): its _valid_from, unless the version before began later.',
  _version: "The mirror row's _version when crm-sync wrote this version.",
  _valid_from:
    "When this version became valid: the upstream's updated_at of the record (a resource without one: " +
    'when crm-sync wrote it); a tombstone: when the deletion was observed. Never before the previous ' +
    "version's _valid_from: an earlier time is taken as that one, whose interval is then empty.",
  _valid_to: 'When the next version began (its _valid_from); null while this one is current.',
  _deleted: 'Whether this version is a tombstone (_deleted_at is not null).',
  _seq: "The order in which crm-sync wrote the versions (of all records): a record's next version has a greater one.",
}

export const HISTORY_SCHEMA_TEXT =
  'History of the main tables of the mirror, kept by crm-sync: one view per main table ' +
  '(history.crm_people for crm.people) with every version crm-sync wrote, valid from _valid_from to ' +
  '_valid_to, over a table of the versions (history.crm_people_versions); history.<table>_as_of(t) gives ' +
  'the table as it was at t.'

export interface HistoryView {
  /** `crm_people` */
  name: string
  of: DictionaryTable
  description: string
  columns: DictionaryColumn[]
}

/** The view's description: also the comment on it. */
export const historyViewDescription = (table: DictionaryTable): string =>
  `Every version of the records of ${table.name} crm-sync wrote (a write that changed a field, _raw or ` +
  `whether the record is deleted), valid from _valid_from to _valid_to. ${table.description}`.trim()

/** The columns a history view adds after the main table's, in order. */
export const HISTORY_VIEW_COLUMNS: readonly DictionaryColumn[] = (
  [
    ['_valid_from', 'timestamptz'],
    ['_valid_to', 'timestamptz'],
    ['_deleted', 'boolean'],
  ] as const
).map(([name, type]) => ({ name, type, description: HISTORY_COLUMN_TEXTS[name] ?? '' }))

/** What a column of a history view or versions table means: history's own text, else the dictionary's. */
export const historyColumnText = (table: DictionaryTable | undefined, column: string): string =>
  HISTORY_COLUMN_TEXTS[column] ?? table?.columns.find((c) => c.name === column)?.description ?? ''

/** One view per main table, in the order of the resource table. */
export const historyViews: readonly HistoryView[] = mirrorTables
  .filter((table) => table.kind === 'main')
  .map((table) => ({
    name: `${table.schema}_${table.table}`,
    of: table,
    description: historyViewDescription(table),
    columns: [
      ...table.columns.map((column) => ({ ...column, description: historyColumnText(table, column.name) })),
      ...HISTORY_VIEW_COLUMNS,
    ],
  }))
