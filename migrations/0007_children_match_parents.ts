// From this version on, a parent written with includes byte for byte equal to those of the row it
// replaces leaves its children alone: they are the children of those includes already. To know that
// the row version it compared with is the one it replaced (no other writer came between its snapshot
// and its lock), every main table gets `_version`, which every write of the engine increments.
//
// Children mirror the includes of their parent's last write that carried them. That holds for every
// child row this version and the previous one wrote, but an earlier version, writing parents and
// children in one statement, could keep the children of two writers that raced for one parent. Such
// rows would now stay until the includes change, so they are removed here: for every parent whose
// `_raw` carries all the includes of a child table, the child rows that are not the item the parent's
// `_raw` holds at their place (`_ordinal`), and all but one copy of a row that is.
// (A race added a writer's rows to the other's, and both wrote every row of their record, so the rows
// of the record that won are all there.)
// Frozen in time: this file must not import application code. The mappings below are those of
// src/resources/index.ts at this version: child table, parent resource, include keys in order.
import { type Kysely, sql } from 'kysely'

const CONTACT_CHILDREN: [string, string[]][] = [
  ['crm.tags', ['tags']],
  ['crm.addresses', ['addrs']],
  ['crm.contact_details', ['tels', 'emails', 'homepages']],
  ['crm.positions', ['positions']],
  ['crm.custom_fields', ['custom_fields']],
]

const MAPPINGS: { parent: string; children: [string, string[]][] }[] = [
  { parent: 'crm.people', children: CONTACT_CHILDREN },
  { parent: 'crm.companies', children: CONTACT_CHILDREN },
  {
    parent: 'crm.deals',
    children: [
      ['crm.tags', ['tags']],
      ['crm.deal_people', ['people']],
      ['crm.custom_fields', ['custom_fields']],
    ],
  },
  {
    parent: 'crm.projects',
    children: [
      ['crm.tags', ['tags']],
      ['crm.project_people', ['people']],
      ['crm.custom_fields', ['custom_fields']],
    ],
  },
]

const MAIN_TABLES = [
  'crm.people',
  'crm.companies',
  'crm.deals',
  'crm.projects',
  'crm.tasks',
  'crm.users',
  'reservations.contacts',
  'reservations.bookings',
]

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

function cleanup(parent: string, child: string, keys: string[]): string {
  const keyArray = `array[${keys.map(literal).join(', ')}]::text[]`
  // The items as the store numbers them: the include arrays in mapping order, items that are not
  // objects or arrays skipped, a value that is not an array giving none.
  return `
    with expected as (
      select p.id as parent_id, (row_number() over (partition by p.id order by k.ord, e.idx) - 1)::int as ordinal,
        e.item
      from ${parent} p
      cross join lateral unnest(${keyArray}) with ordinality k(key, ord)
      cross join lateral jsonb_array_elements(
        case jsonb_typeof(p._raw -> k.key) when 'array' then p._raw -> k.key else '[]'::jsonb end
      ) with ordinality e(item, idx)
      where p._raw ?& ${keyArray} and jsonb_typeof(e.item) in ('object', 'array')
    ),
    checked as (
      select c.ctid as row_id, c._parent_id, c._ordinal,
        coalesce(record_image_eq(row(c._raw), row(x.item)), false) as matches
      from ${child} c
      join ${parent} p on p.id = c._parent_id and p._raw ?& ${keyArray}
      left join expected x on x.parent_id = c._parent_id and x.ordinal = c._ordinal
      where c._parent_resource = ${literal(parent)}
    ),
    ranked as (
      select row_id, matches,
        row_number() over (partition by _parent_id, _ordinal order by matches desc, row_id) as copy
      from checked
    )
    delete from ${child} c using ranked r
    where c.ctid = r.row_id and (not r.matches or r.copy > 1)
  `
}

/** Deletes the child rows that are not their parent's items (exported for its test). */
export async function removeStrayChildren(db: Kysely<any>): Promise<void> {
  for (const { parent, children } of MAPPINGS) {
    for (const [child, keys] of children) await sql.raw(cleanup(parent, child, keys)).execute(db)
  }
}

export async function up(db: Kysely<any>): Promise<void> {
  // A constant default: no table is rewritten.
  for (const table of MAIN_TABLES) {
    await sql.raw(`alter table ${table} add column _version bigint not null default 0`).execute(db)
  }
  await removeStrayChildren(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  // The rows removed are not restored: they were not the children of their parents' records.
  for (const table of MAIN_TABLES) await sql.raw(`alter table ${table} drop column _version`).execute(db)
}
