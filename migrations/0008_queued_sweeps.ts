// A full sweep asked for while another sweep holds its resource no longer is refused: it waits. A
// sweep row is now either active (its job sent: `job_sent_at` set, queued for a worker or running) or
// waiting for its resource (`job_sent_at` null, status `queued`). At most one active sweep per
// resource, whichever replica asks; waiting sweeps are started one at a time as the active one ends.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`set local lock_timeout = '10s'`.execute(db)
  await sql`alter table sync.run_resources add column job_sent_at timestamptz`.execute(db)
  // Every unfinished sweep of an earlier version had its job sent with its run.
  await sql`
    update sync.run_resources set job_sent_at = coalesce(started_at, progress_at)
    where status in ('queued', 'running')
  `.execute(db)
  await sql`drop index sync.run_resources_one_active_per_resource`.execute(db)
  await sql`
    create unique index run_resources_one_active_per_resource on sync.run_resources (resource)
    where status in ('queued', 'running') and job_sent_at is not null
  `.execute(db)
  await sql`
    create index run_resources_waiting on sync.run_resources (resource, run_id)
    where status = 'queued' and job_sent_at is null
  `.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index sync.run_resources_waiting`.execute(db)
  await sql`drop index sync.run_resources_one_active_per_resource`.execute(db)
  await sql`
    create unique index run_resources_one_active_per_resource on sync.run_resources (resource)
    where status in ('queued', 'running')
  `.execute(db)
  await sql`alter table sync.run_resources drop column job_sent_at`.execute(db)
}
