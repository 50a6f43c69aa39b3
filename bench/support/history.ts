// The cost of the mirror's history (src/store/history.ts) for the apply scenario: the same work with the
// history triggers of crm.people disabled, and what a version takes on disk.
import { sql } from 'kysely'
import type { Db } from '../../src/store/database.ts'
import { round } from './stats.ts'

/** Runs `work` with crm.people's history triggers enabled or not; enabled again after. */
export async function withHistory<T>(db: Db, enabled: boolean, work: () => Promise<T>): Promise<T> {
  if (!enabled)
    await sql`alter table crm.people disable trigger history_insert, disable trigger history_update`.execute(
      db,
    )
  try {
    return await work()
  } finally {
    if (!enabled)
      await sql`alter table crm.people enable trigger history_insert, enable trigger history_update`.execute(
        db,
      )
  }
}

export interface HistorySize {
  versions: number
  /** pg_total_relation_size of history.crm_people_versions (heap, TOAST, indexes), after a vacuum. */
  bytes: number
  bytesPerVersion: number
  /** The same of crm.people, per row, for reference. */
  mirrorRows: number
  mirrorBytesPerRow: number
  /** Versions per person. */
  versionsPerRecord: number
}

export async function historySize(db: Db): Promise<HistorySize> {
  await sql`vacuum analyze history.crm_people_versions, crm.people`.execute(db)
  const { rows } = await sql<{ versions: number; bytes: number; mirrorRows: number; mirrorBytes: number }>`
    select (select count(*)::int from history.crm_people_versions) as versions,
      pg_total_relation_size('history.crm_people_versions')::float8 as bytes,
      (select count(*)::int from crm.people) as "mirrorRows",
      pg_total_relation_size('crm.people')::float8 as "mirrorBytes"`.execute(db)
  const row = rows[0] as NonNullable<(typeof rows)[number]>
  return {
    versions: row.versions,
    bytes: row.bytes,
    bytesPerVersion: round(row.bytes / Math.max(1, row.versions)),
    mirrorRows: row.mirrorRows,
    mirrorBytesPerRow: round(row.mirrorBytes / Math.max(1, row.mirrorRows)),
    versionsPerRecord: round(row.versions / Math.max(1, row.mirrorRows), 1),
  }
}
