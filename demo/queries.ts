// What a reporting user runs against the mirror: the three example queries the demo prints with
// their results, and the row counts of every table (main, child and member tables). Read-only; live
// rows are `_deleted_at is null`.
import { sql } from 'kysely'
import { childTables, resources } from '../src/resources/index.ts'
import type { Db } from '../src/store/database.ts'

export const EXAMPLE_QUERIES = [
  {
    title: 'Deal pipeline: open, won and lost deals and their value',
    sql: `select current_state, count(*) as deals, round(sum(value)) as value
from crm.deals
where _deleted_at is null
group by current_state
order by current_state`,
  },
  {
    title: 'The most used tags of live people',
    sql: `select t.name as tag, count(*) as people
from crm.tags t
join crm.people p on p.id = t._parent_id and t._parent_resource = 'crm.people'
where p._deleted_at is null
group by t.name
order by people desc, tag
limit 5`,
  },
  {
    title: 'Guests per contact, across the two services’ tables: bookings joined to contacts',
    sql: `select concat_ws(' ', c.first, c.last) as contact, count(*) as bookings, sum(b.number_guests) as guests
from reservations.bookings b
join reservations.contacts c on c.id = b.contact_id
where b._deleted_at is null and c._deleted_at is null
group by c.id, c.first, c.last
order by guests desc, contact
limit 5`,
  },
] as const

export type QueryResult = { columns: string[]; rows: string[][] }

export async function runQuery(db: Db, text: string): Promise<QueryResult> {
  const result = await sql<Record<string, unknown>>`${sql.raw(text)}`.execute(db)
  const columns = result.rows[0] ? Object.keys(result.rows[0]) : []
  return {
    columns,
    rows: result.rows.map((row) => columns.map((column) => String(row[column] ?? ''))),
  }
}

export interface TableCount {
  table: string
  live: number
  /** Tombstoned rows; null for child and member tables, which are replaced rather than tombstoned. */
  deleted: number | null
}

export async function countRows(db: Db): Promise<TableCount[]> {
  const main = await Promise.all(
    resources.map(async ({ name }) => {
      const { rows } = await sql<{ live: number; deleted: number }>`
        select count(*) filter (where _deleted_at is null)::int as live,
               count(*) filter (where _deleted_at is not null)::int as deleted
        from ${sql.table(name)}
      `.execute(db)
      return { table: name, live: rows[0]?.live ?? 0, deleted: rows[0]?.deleted ?? 0 }
    }),
  )
  // Child tables, then member tables (crm.filter_group_members): replaced, never tombstoned.
  const memberTables = resources.flatMap((resource) => (resource.members ? [resource.members.table] : []))
  const children = await Promise.all(
    [...new Set([...childTables.map((child) => child.table), ...memberTables])].map(async (table) => {
      const { rows } = await sql<{ rows: number }>`
        select count(*)::int as rows from ${sql.table(table)}
      `.execute(db)
      return { table, live: rows[0]?.rows ?? 0, deleted: null }
    }),
  )
  return [...main, ...children]
}
