// The comments of schema history (./history-sql.ts): the view of each main table's versions and its
// columns, the versions table, the functions, with the texts of the data dictionary
// (src/resources/dictionary/history.ts).
import {
  HISTORY_VIEW_COLUMNS,
  historyColumnText,
  historyViewDescription,
} from '../resources/dictionary/history.ts'
import { mirrorTables } from '../resources/dictionary/index.ts'
import { ident, literal } from './dictionary-sql.ts'

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
  const describe = (column: string) => historyColumnText(dictionary, column)
  const found = new Map<string, { statement: string; text: string }>()
  const add = (key: string, object: string, text: string) =>
    found.set(key, { statement: `comment on ${object} is ${literal(text)}`, text })
  if (dictionary) add(`table.${view}`, `view ${q(view)}`, historyViewDescription(dictionary))
  for (const column of [...columns, ...HISTORY_VIEW_COLUMNS.map((c) => c.name)])
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
