// The includes `avatar` and `connections` of people and companies, asked for from this version on.
// - avatar: one object whose fields are not shown upstream: a jsonb column of crm.people and
//   crm.companies, the object kept whole (null when the record has none).
// - crm.connections: the items of `connections`, whose shape is not shown at all: a child table with
//   the engine columns of every other, keyed like them by the item's place (an item without an id, or
//   two items with one id, never fail a write); `id` is typed where the item has a whole number there,
//   the whole item is in `_raw`, whatever its shape.
// Records mirrored before carry neither, unless the upstream sent them unasked. Those that do get their
// avatar and their connection rows here, as the store writes them: a parent written again with
// includes equal to its row's leaves its children alone, so rows missing now would stay missing. (The
// ids of items are typed here for whole numbers and decimal strings of digits; another form, which no
// upstream is known to send, stays null until the record's connections change.) The others get theirs
// when they are next read: at a change, or at the next full run. The new table is empty but for those
// rows, so its key is built at once.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const PARENTS = ['crm.people', 'crm.companies']
/** The child tables this migration creates, with their key (0018 keyed those before). */
export const CHILD_TABLES = ['crm.connections']
const MAX_SAFE_INTEGER = '9007199254740991'

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The item's `id` as the store types it (bigint): a whole number within ±2^53 - 1, else null. */
const itemId = (item: string) => {
  const id = `(${item} ->> 'id')`
  const whole = (value: string) =>
    `case when ${value} = trunc(${value}) and abs(${value}) <= ${MAX_SAFE_INTEGER} then ${value}::bigint end`
  return `case
    when jsonb_typeof(${item}) <> 'object' then null
    when jsonb_typeof(${item} -> 'id') = 'number' then ${whole(`${id}::numeric`)}
    when jsonb_typeof(${item} -> 'id') = 'string' and ${id} ~ '^\\s*[+-]?[0-9]{1,16}\\s*$'
      then ${whole(`${id}::numeric`)}
  end`
}

const statements = [
  ...PARENTS.map((parent) => `alter table ${parent} add column avatar jsonb`),
  `create table crm.connections (
    _parent_resource text not null,
    _parent_id bigint not null,
    _ordinal integer not null,
    id bigint,
    _raw jsonb not null,
    _synced_at timestamptz not null default now(),
    constraint connections_pkey primary key (_parent_resource, _parent_id, _ordinal)
  )`,
  // A JSON null is no avatar: the store writes SQL null for it.
  ...PARENTS.map(
    (parent) => `update ${parent} set avatar = _raw -> 'avatar'
      where _raw ? 'avatar' and jsonb_typeof(_raw -> 'avatar') <> 'null'`,
  ),
  // Every item is a row, at its place in the array; a value that is no array gives none.
  ...PARENTS.map(
    (parent) => `insert into crm.connections (_parent_resource, _parent_id, _ordinal, id, _raw)
      select ${literal(parent)}, p.id, (e.idx - 1)::int, ${itemId('e.item')}, e.item
      from ${parent} p
      cross join lateral jsonb_array_elements(
        case jsonb_typeof(p._raw -> 'connections') when 'array' then p._raw -> 'connections' else '[]'::jsonb end
      ) with ordinality e(item, idx)
      where p._raw ? 'connections'`,
  ),
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table crm.connections`.execute(db)
  for (const parent of PARENTS) await sql.raw(`alter table ${parent} drop column avatar`).execute(db)
}
