// The comments of schema history (./history-sql.ts): the view of each main table's versions and its
// columns, the versions table, the functions. The main table's own columns are described as in the data
// dictionary; the columns history adds, here.
import { mirrorTables } from '../resources/dictionary/index.ts'
import { ident, literal } from './dictionary-sql.ts'

const HISTORY_COLUMN_TEXTS: Readonly<Record<string, string>> = {
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

export interface CommentTarget {
  schema: string
  /** `crm_people` */
  view: string
  /** `crm_people_versions` */
  table: string
}

/** `comment on ...` key (as ./history.ts reads the catalog): the statement and its text. */
export function historyComments(mirror: string, target: CommentTarget, columns: string[]) {
  const { schema, view, table } = target
  const q = (name: string) => `${ident(schema)}.${ident(name)}`
  const dictionary = mirrorTables.find((entry) => entry.name === mirror)
  const describe = (column: string) =>
    HISTORY_COLUMN_TEXTS[column] ?? dictionary?.columns.find((c) => c.name === column)?.description ?? ''
  const found = new Map<string, { statement: string; text: string }>()
  const add = (key: string, object: string, text: string) =>
    found.set(key, { statement: `comment on ${object} is ${literal(text)}`, text })
  add(
    `table.${view}`,
    `view ${q(view)}`,
    `Every version of the records of ${mirror} crm-sync wrote (a write that changed a field, _raw or ` +
      `whether the record is deleted), valid from _valid_from to _valid_to. ${dictionary?.description ?? ''}`.trim(),
  )
  for (const column of [...columns, '_valid_from', '_valid_to', '_deleted'])
    add(`column.${view}.${column}`, `column ${q(view)}.${ident(column)}`, describe(column))
  add(
    `table.${table}`,
    `table ${q(table)}`,
    `The versions of the records of ${mirror}, as written (never updated); history.${view} adds when ` +
      'each ended (_valid_to): query that view.',
  )
  for (const column of [...columns, '_valid_from', '_seq'])
    add(`column.${table}.${column}`, `column ${q(table)}.${ident(column)}`, describe(column))
  add(
    `function.${view}_as_of`,
    `function ${q(`${view}_as_of`)}(timestamptz)`,
    `${mirror} as it was at the given time: of each record the version valid then (_valid_from <= t < ` +
      `_valid_to), deleted ones with _deleted_at set; the columns of ${mirror}.`,
  )
  add(
    `function.${view}_write`,
    `function ${q(`${view}_write`)}()`,
    `Trigger function of ${mirror}: writes a version of every row a statement changed in more than its engine columns.`,
  )
  return found
}
