// The locks every change of a sweep takes first, and the run status derived from its sweeps.
import { type Kysely, sql } from 'kysely'
import { relationOf } from '../account-schemas.ts'
import type { Database } from '../schema.ts'

// A sweep writes progress after every page and every reconciled batch; one that has been silent for
// this long lost its job (dead-lettered, expired) and would otherwise block its resource forever.
export const STALE_AFTER_SECONDS = 2 * 3600

export function inTransaction<T>(
  db: Kysely<Database>,
  work: (trx: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work)
}

// Arbitrary constant of this project: the first key of the advisory locks that serialise the sweeps of
// a resource (the second is the hash of its name).
const SWEEP_LOCK = 0x5eed

/** Takes the resources' advisory locks, in name order, until the end of the transaction. */
export async function lockResources(trx: Kysely<Database>, resources: readonly string[]) {
  for (const resource of [...new Set(resources)].sort()) {
    // The table as the account names it (`crm.people`, `crm_north.people`): a lock per account's table.
    const table = relationOf(trx, resource)
    await sql`select pg_advisory_xact_lock(${SWEEP_LOCK}, hashtext(${table}))`.execute(trx)
  }
}

export async function lockRun(trx: Kysely<Database>, runId: number) {
  return trx
    .selectFrom('sync.runs')
    .select(['id', 'mode'])
    .where('id', '=', runId)
    .forUpdate()
    .executeTakeFirst()
}

/**
 * Derives the run's status, start, end and error from its sweeps. Call with the run's row locked.
 * True when this call finished the run: its last unfinished sweep has just ended, in this transaction.
 */
export async function deriveRunStatus(trx: Kysely<Database>, runId: number): Promise<boolean> {
  const result = await sql<{ ended: boolean }>`
    update sync.runs r set
      status = case
        when s.unfinished = 0 then case when s.failed > 0 then 'failed' else 'succeeded' end
        when s.started > 0 then 'running'
        else 'queued' end,
      started_at = coalesce(r.started_at, s.first_start),
      finished_at = case when s.unfinished = 0 then coalesce(r.finished_at, now()) end,
      error = s.errors
    from (
      select
        count(*) filter (where status in ('queued', 'running')) as unfinished,
        count(*) filter (where status = 'failed') as failed,
        count(*) filter (where status <> 'queued') as started,
        min(started_at) as first_start,
        string_agg(resource || ': ' || error, '; ' order by resource) filter (where error is not null) as errors
      from sync.run_resources where run_id = ${runId}
    ) s, (select finished_at from sync.runs where id = ${runId}) was
    where r.id = ${runId}
    returning s.unfinished = 0 and was.finished_at is null as ended
  `.execute(trx)
  return result.rows[0]?.ended === true
}
