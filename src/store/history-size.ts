// How many versions schema history holds, as `crm-sync check` shows it: cheap on a table of any size,
// and right before autovacuum has analyzed the versions tables. A table's statistics (reltuples and
// relpages of its last ANALYZE or VACUUM) give its rows per page, times the pages it has now, as the
// planner estimates: the versions written since the last ANALYZE count too. A table without them
// (reltuples -1: never analyzed, as after the first sync; or 0: analyzed empty) has its rows counted
// on at most SAMPLE_PAGES pages: all of a small table, a random share of a large one, scaled up.
import { type Kysely, sql } from 'kysely'
import { relationOf } from './account-schemas.ts'
import { HISTORY_SCHEMA } from './history-sql.ts'

/** The most pages read to count a table without statistics (8 MiB of 8 KiB pages). */
const SAMPLE_PAGES = 1_000

interface VersionsTable {
  name: string
  /** reltuples: -1 never analyzed. */
  tuples: number
  /** relpages when reltuples was taken. */
  pages: number
  /** The pages of the table now. */
  pagesNow: number
  /** With its indexes and TOAST. */
  bytes: number
}

export interface HistorySize {
  versions: number
  bytes: number
}

async function versionsOf<DB>(db: Kysely<DB>, table: VersionsTable): Promise<number> {
  if (table.pagesNow === 0) return 0
  if (table.tuples > 0 && table.pages > 0) return (table.tuples / table.pages) * table.pagesNow
  // SYSTEM picks each page with this chance; at 100 every page, an exact count.
  const percent = Math.min(100, (100 * SAMPLE_PAGES) / table.pagesNow)
  const versions = sql.id(relationOf(db, HISTORY_SCHEMA), table.name)
  const { rows } = await sql<{ counted: number }>`
    select count(*)::float8 as counted from ${versions} tablesample system (${percent}::float4)`.execute(db)
  return ((rows[0]?.counted ?? 0) * 100) / percent
}

/** The versions in schema history (an estimate but for small tables never analyzed) and its bytes. */
export async function historySize<DB>(db: Kysely<DB>): Promise<HistorySize> {
  const { rows } = await sql<VersionsTable>`
    select c.relname::text as name, c.reltuples::float8 as tuples, c.relpages::float8 as pages,
      (pg_relation_size(c.oid) / current_setting('block_size')::int)::float8 as "pagesNow",
      pg_total_relation_size(c.oid)::float8 as bytes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${relationOf(db, HISTORY_SCHEMA)} and c.relkind = 'r'`.execute(db)
  let versions = 0
  for (const table of rows) versions += await versionsOf(db, table)
  const bytes = rows.reduce((sum, table) => sum + table.bytes, 0)
  return { versions, bytes }
}
