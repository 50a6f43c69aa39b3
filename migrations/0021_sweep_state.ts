// A sweep's state, named (src/store/runs/states.ts): `state` derived from the columns that hold it, so
// that every query says which state it means; and `make_way_for`, the full run an incremental sweep
// makes way for, set once where that run is created. Frozen in time: this file must not import
// application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`set local lock_timeout = '10s'`.execute(db)
  await sql`
    alter table sync.run_resources add column state text generated always as (
      case
        when status = 'queued' and job_sent_at is null then 'waiting'
        when status = 'queued' and started_at is null then 'sent'
        when status = 'queued' then 'handed_back'
        else status
      end
    ) stored
  `.execute(db)
  await sql`alter table sync.run_resources add column make_way_for bigint`.execute(db)
  // An incremental sweep under way while a full one of its resource waits: what the full run's
  // creation now marks.
  await sql`
    update sync.run_resources s set make_way_for = (
      select min(w.run_id) from sync.run_resources w join sync.runs r on r.id = w.run_id
      where w.resource = s.resource and w.state = 'waiting' and r.mode = 'full'
    )
    from sync.runs sr
    where sr.id = s.run_id and sr.mode = 'incremental' and s.state in ('sent', 'running', 'handed_back')
  `.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.run_resources drop column make_way_for`.execute(db)
  await sql`alter table sync.run_resources drop column state`.execute(db)
}
