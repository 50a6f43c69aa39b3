// What the sweeps were doing, for a failure message: per resource, its latest sweep and how many wait
// or run, and when it last completed an incremental and a full sweep; and the jobs that have been
// active for more than 30 s (pg-boss's table: a diagnosis, nothing the suite relies on).
import { sql } from 'kysely'
import type { Db } from '../../src/store/database.ts'

const time = (value: Date | null) => (value ? value.toISOString().slice(11, 19) : '–')

export async function describeSweeps(db: Db): Promise<string[]> {
  const { rows } = await sql<{
    resource: string
    run_id: number
    mode: string
    status: string
    pages: number
    api_requests: number
    started_at: Date | null
    finished_at: Date | null
    job_sent_at: Date | null
    error: string | null
    unfinished: number
    last_incremental: Date | null
    last_full: Date | null
  }>`
    select distinct on (rr.resource) rr.resource, rr.run_id, r.mode, rr.status, rr.pages, rr.api_requests,
      rr.started_at, rr.finished_at, rr.job_sent_at, rr.error,
      (select count(*)::int from sync.run_resources u
        where u.resource = rr.resource and u.status in ('queued', 'running')) as unfinished,
      s.last_incremental_sync_at as last_incremental, s.last_full_sync_at as last_full
    from sync.run_resources rr
    join sync.runs r on r.id = rr.run_id
    left join sync.resource_state s on s.resource = rr.resource
    order by rr.resource, rr.run_id desc
  `.execute(db)
  return rows.map(
    (row) =>
      `${row.resource}: last sweep run ${row.run_id} (${row.mode}) ${row.status}, ${row.pages} pages, ` +
      `${row.api_requests} requests, started ${time(row.started_at)}, finished ${time(row.finished_at)}, ` +
      `job sent ${time(row.job_sent_at)}${row.error ? `, error ${row.error.slice(0, 120)}` : ''}; ` +
      `${row.unfinished} unfinished; last incremental ${time(row.last_incremental)}, full ${time(row.last_full)}`,
  )
}

export async function describeLongActiveJobs(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string; n: number; oldest: Date; created: number }>`
    select name, count(*)::int as n, min(started_on) as oldest,
      (select count(*)::int from pgboss.job c where c.name = j.name and c.state = 'created') as created
    from pgboss.job j
    where state = 'active' and started_on < now() - interval '30 seconds'
    group by name order by name
  `.execute(db)
  return rows.map(
    (row) =>
      `pg-boss: ${row.n} ${row.name} job(s) active since ${time(row.oldest)}; ${row.created} created behind them`,
  )
}
