// Reads for the operator's view of the engine (`crm-sync status`, `/admin/status`, `/metrics`):
// sweeps per resource and the inbox. Each stays cheap on a mirror that has run for years.
import { sql } from 'kysely'
import { hasUpdatedAt, type Resource } from '../resources/index.ts'
import type { Db } from './database.ts'
import { UNFINISHED_STATES } from './runs/states.ts'
import type { InboxStatus } from './schema.ts'

/** The latest finished sweep of each resource, with its run's mode. */
export async function readLastSweeps(db: Db, resources: readonly string[]) {
  if (resources.length === 0) return []
  // One look-up per resource, newest run first: the primary key (run_id, resource) answers each
  // with a short backward scan, however many runs the table holds.
  const result = await sql<{
    resource: string
    run_id: number
    mode: 'incremental' | 'full'
    status: 'succeeded' | 'failed'
    finished_at: Date | null
    error: string | null
  }>`
    select r.name as resource, s.run_id, s.mode, s.status, s.finished_at, s.error
    from unnest(${[...resources]}::text[]) as r(name)
    cross join lateral (
      select rr.run_id, runs.mode, rr.status, rr.finished_at, rr.error
      from sync.run_resources rr join sync.runs on runs.id = rr.run_id
      where rr.resource = r.name and rr.status in ('succeeded', 'failed')
      order by rr.run_id desc
      limit 1
    ) s
  `.execute(db)
  return result.rows
}

/**
 * The unfinished (queued or running) sweeps: per resource the active one (its job sent) first, then
 * those waiting for it in run order.
 */
export async function readUnfinishedSweeps(db: Db) {
  return db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource', 'status', 'records', 'pages', 'remote_count', 'started_at', 'progress_at'])
    .select(['state', sql<boolean>`state = 'waiting'`.as('waiting')])
    .where('state', 'in', UNFINISHED_STATES)
    .orderBy('resource')
    .orderBy(sql`state = 'waiting'`)
    .orderBy('run_id')
    .execute()
}

/** Deliveries in the inbox by status. `processed` counts every delivery ever applied: not for scrapes. */
export async function countInboxByStatus(db: Db): Promise<Record<InboxStatus, number>> {
  const rows = await db
    .selectFrom('sync.inbox')
    .select(['status', sql<number>`count(*)::int`.as('count')])
    .groupBy('status')
    .execute()
  const counts: Record<InboxStatus, number> = { accepted: 0, rejected: 0, processed: 0, failed: 0 }
  for (const row of rows) counts[row.status] = row.count
  return counts
}

/** Bytes the inbox takes on disk: its table, TOAST (large bodies) and indexes. Cheap: file sizes. */
export async function readInboxBytes(db: Db): Promise<number> {
  const result = await sql<{ bytes: number }>`
    select pg_total_relation_size(${'sync.inbox'}::regclass) as bytes
  `.execute(db)
  return result.rows[0]?.bytes ?? 0
}

/** Accepted deliveries not yet applied, and when the oldest arrived (the partial index answers it). */
export async function readInboxBacklog(db: Db): Promise<{ depth: number; oldest: Date | null }> {
  const row = await db
    .selectFrom('sync.inbox')
    .select([sql<number>`count(*)::int`.as('depth'), sql<Date | null>`min(received_at)`.as('oldest')])
    .where('status', '=', 'accepted')
    .executeTakeFirstOrThrow()
  return { depth: row.depth, oldest: row.oldest }
}

/** The newest `updated_at` among the live rows of each resource that has one (an index reads it). */
export async function readNewestChanges(
  db: Db,
  resources: readonly Resource[],
): Promise<Map<string, Date | null>> {
  const entries = await Promise.all(
    resources.map(async (resource) => {
      if (!hasUpdatedAt(resource)) return [resource.name, null] as const
      const result = await sql<{ newest: Date | null }>`
        select max(updated_at) as newest from ${sql.table(resource.name)} where _deleted_at is null
      `.execute(db)
      return [resource.name, result.rows[0]?.newest ?? null] as const
    }),
  )
  return new Map(entries)
}
