// The end of a sweep: its status, its run's, and the next waiting sweep of its resource started; and
// sweeps whose job was lost given up.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../database.ts'
import type { Database } from '../schema.ts'
import { deriveRunStatus, inTransaction, lockResources, lockRun } from './locks.ts'
import { HOLDS_RESOURCE, TRANSITIONS } from './states.ts'
import {
  type EnqueueSweep,
  type SweepEnd,
  type SweepKey,
  SweepLeaseLost,
  type SweepProgress,
} from './types.ts'
import { startWaitingSweep } from './waiting.ts'

/** A sweep's end, and whether it was the end of its run (the run's status is derived once, here). */
export interface SweepEnded {
  runEnded: boolean
}

/** Ends the sweep (held by `lease`, or whoever holds it when null); null when it had finished already. */
export async function endSweep(
  trx: Kysely<Database>,
  enqueue: EnqueueSweep,
  runId: number,
  resource: string,
  lease: string | null,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<SweepEnded | null> {
  await lockResources(trx, [resource])
  await lockRun(trx, runId)
  let query = trx
    .updateTable('sync.run_resources')
    .set((eb) => ({
      status: end.status,
      error: end.error ?? null,
      finished_at: sql<Date>`now()`,
      progress_at: sql<Date>`now()`,
      api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      ...(progress.remoteCount === undefined ? {} : { remote_count: progress.remoteCount }),
    }))
    .where('run_id', '=', runId)
    .where('resource', '=', resource)
    .where('state', 'in', TRANSITIONS.end.from)
  if (lease !== null) query = query.where('lease', '=', lease)
  const result = await query.executeTakeFirst()
  if (result.numUpdatedRows === 0n) return null
  const runEnded = await deriveRunStatus(trx, runId)
  await startWaitingSweep(trx, resource, enqueue)
  return { runEnded }
}

/**
 * Ends the sweep held by `key`, derives its run's status and starts the sweep waiting for its resource;
 * inside the caller's transaction when given one (e.g. with the resource state). Throws SweepLeaseLost
 * when this attempt no longer owns it.
 */
export async function finishSweep(
  db: Kysely<Database>,
  enqueue: EnqueueSweep,
  key: SweepKey,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<SweepEnded> {
  const ended = await inTransaction(db, (trx) =>
    endSweep(trx, enqueue, key.runId, key.resource, key.lease, end, progress),
  )
  if (!ended) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
  return ended
}

/**
 * Fails an unfinished sweep whoever holds it, or however long it waited: for a job that cannot run
 * (dead-lettered, unknown resource, service switched off). Null when it had already finished.
 */
export async function abandonSweep(
  db: Db,
  enqueue: EnqueueSweep,
  runId: number,
  resource: string,
  reason: string,
): Promise<SweepEnded | null> {
  return db
    .transaction()
    .execute((trx) => endSweep(trx, enqueue, runId, resource, null, { status: 'failed', error: reason }))
}

/** Fails the active sweeps of these resources that have shown no progress for `seconds`. */
export async function abandonStaleSweeps(
  trx: Kysely<Database>,
  resources: string[],
  seconds: number,
  enqueue: EnqueueSweep,
) {
  const stale = await trx
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('resource', 'in', resources)
    .where('state', 'in', HOLDS_RESOURCE)
    .where('progress_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    .execute()
  for (const { run_id, resource } of stale) {
    await endSweep(trx, enqueue, run_id, resource, null, {
      status: 'failed',
      error: `abandoned: no progress for ${seconds} s (its job was lost or its worker died)`,
    })
  }
}
