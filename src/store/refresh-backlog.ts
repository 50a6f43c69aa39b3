// The refreshes of a resource that are queued or running (pg-boss jobs of the refresh queue, keyed
// `<resource>:<id>`), and the earliest delivery they were queued for.
import { sql } from 'kysely'
import type { Db } from './database.ts'

export interface RefreshBacklog {
  pending: number
  /** When the earliest delivery that one of them answers arrived; null when none says. */
  oldest: Date | null
}

export async function readRefreshBacklog(
  db: Db,
  jobs: { schema: string; queue: string },
  resource: string,
): Promise<RefreshBacklog> {
  const result = await sql<{ pending: number; oldest: Date | null }>`
    select count(*)::int as pending,
      min(case when data->>'receivedAt' ~ '^\\d{4}-\\d\\d-\\d\\dT' then (data->>'receivedAt')::timestamptz end) as oldest
    from ${sql.table(`${jobs.schema}.job`)}
    where name = ${jobs.queue} and state < 'completed' and data->>'resource' = ${resource}
  `.execute(db)
  const row = result.rows[0]
  return { pending: row?.pending ?? 0, oldest: row?.oldest ?? null }
}
