// A person's historic events and assistants (person-details.ts) against the sandbox's truth: for every
// person live both upstream and in the mirror (its crm.people row without `_deleted_at`), the rows of
// crm.historic_events and crm.assistants under it, in `_ordinal` order, are its items upstream in
// their order, with the same `id` and typed columns (`description` is the item's `desc`). No include
// or webhook carries them: they are read per person, and may lag the person's own row, so
// mirror-truth.ts compares them only when asked to (`details: true`). One TableTruth per table, a
// person a "record" of it (people missing or stale are crm.people's differences); a difference names
// the first place that differs, the mirror's value first:
// `crm.historic_events 42: item 1 (id 7): unparsed_date "12.03." != "13.03."`.
import { sql } from 'kysely'
import type { Db } from '../src/store/database.ts'
import type { PersonDetails } from './control-person-details.ts'
import type { Sandbox } from './sandbox.ts'
import type { Difference, TableTruth } from './table-truth.ts'

/** Values of one item, by column, as text (null stays null). */
type Item = Record<string, string | null>

interface DetailTable {
  table: 'crm.historic_events' | 'crm.assistants'
  list: 'historic_events' | 'assis'
  /** The columns compared → the item's key upstream. */
  columns: Record<string, string>
}

const DETAIL_TABLES: readonly DetailTable[] = [
  {
    table: 'crm.historic_events',
    list: 'historic_events',
    columns: { id: 'id', unparsed_date: 'unparsed_date', atype: 'atype', description: 'desc' },
  },
  { table: 'crm.assistants', list: 'assis', columns: { id: 'id', name: 'name', tel: 'tel', email: 'email' } },
]

const asText = (value: unknown) => (value === null || value === undefined ? null : String(value))
const shown = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

/** The items each live person holds in the mirror, in `_ordinal` order, by person id. */
async function mirrored(db: Db, { table, columns }: DetailTable): Promise<Map<number, Item[]>> {
  const selected = Object.keys(columns).map((column) => sql`c.${sql.ref(column)}::text as ${sql.ref(column)}`)
  const { rows } = await sql<Item & { parent: string }>`
    select c._parent_id::text as parent, ${sql.join(selected)} from ${sql.table(table)} c
    join crm.people p on p.id = c._parent_id and p._deleted_at is null
    where c._parent_resource = 'crm.people' order by c._parent_id, c._ordinal`.execute(db)
  const held = new Map<number, Item[]>()
  for (const { parent, ...item } of rows) {
    const items = held.get(Number(parent)) ?? []
    items.push(item)
    held.set(Number(parent), items)
  }
  return held
}

/** What differs at the first place the two lists differ, or null when they are the same. */
function firstDifference(held: readonly Item[], expected: readonly Item[]): string | null {
  for (let place = 0; place < Math.min(held.length, expected.length); place++) {
    const mirror = held[place] as Item
    const upstream = expected[place] as Item
    const columns = Object.keys(upstream).filter((column) => mirror[column] !== upstream[column])
    if (columns.length === 0) continue
    const what = columns.map(
      (column) => `${column} ${shown(mirror[column] ?? null)} != ${shown(upstream[column] ?? null)}`,
    )
    return `item ${place} (id ${upstream.id}): ${what.join(', ')}`
  }
  if (held.length === expected.length) return null
  return `items ${held.length} != ${expected.length}`
}

/** Both tables against the sandbox, one TableTruth each (`limit` differences at most per table). */
export async function comparePersonDetails(
  db: Db,
  sandbox: Pick<Sandbox, 'control'>,
  limit = 10,
): Promise<TableTruth[]> {
  const { crm } = sandbox.control
  const { rows: live } = await sql<{ id: string }>`
    select id::text as id from crm.people where _deleted_at is null`.execute(db)
  const liveInMirror = new Set(live.map((row) => Number(row.id)))
  const liveIds = crm.liveIds('people')
  // The truth of each person compared: live upstream and in the mirror.
  const truth = new Map<number, PersonDetails>()
  for (const id of liveIds) {
    const details = liveInMirror.has(id) ? crm.personDetails(id) : undefined
    if (details) truth.set(id, details)
  }
  const compared: TableTruth[] = []
  for (const detail of DETAIL_TABLES) {
    const held = await mirrored(db, detail)
    const differences: Difference[] = []
    let wrong = 0
    for (const [id, details] of truth) {
      const expected = details[detail.list].map((item) =>
        Object.fromEntries(
          Object.entries(detail.columns).map(([column, key]) => [column, asText(item[key])]),
        ),
      )
      const what = firstDifference(held.get(id) ?? [], expected)
      if (what === null) continue
      wrong++
      if (differences.length < limit) differences.push({ table: detail.table, id, what })
    }
    const upstream = liveIds.length
    compared.push({ table: detail.table, upstream, inSync: upstream - wrong, stale: 0, differences })
  }
  return compared
}
