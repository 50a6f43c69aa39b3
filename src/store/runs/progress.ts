// A sweep under way: claimed by one attempt of its job, its progress saved, made to wait for a full one.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../database.ts'
import type { Database } from '../schema.ts'
import { deriveRunStatus, lockResources, lockRun } from './locks.ts'
import { TRANSITIONS } from './states.ts'
import {
  type ClaimedSweep,
  type EnqueueSweep,
  type SavedProgress,
  type SweepKey,
  SweepLeaseLost,
  type SweepProgress,
} from './types.ts'
import { startWaitingSweep } from './waiting.ts'

/**
 * Starts the sweep (or takes over an unfinished one) under `key.lease`; a previous attempt's later
 * writes are refused. Null when the sweep has finished or does not exist.
 */
export async function claimSweep(db: Db, key: SweepKey): Promise<ClaimedSweep | null> {
  return db.transaction().execute(async (trx) => {
    const run = await lockRun(trx, key.runId)
    if (!run) return null
    const sweep = await trx
      .updateTable('sync.run_resources')
      .set({
        status: 'running',
        lease: key.lease,
        started_at: sql<Date>`coalesce(started_at, now())`,
        finished_at: null,
        progress_at: sql<Date>`now()`,
      })
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('state', 'in', TRANSITIONS.claim.from) // a waiting sweep has no job: a stale one is not its own
      .returning(['started_at', 'checkpoint', 'records'])
      .executeTakeFirst()
    if (!sweep?.started_at) return null
    await deriveRunStatus(trx, key.runId)
    return {
      mode: run.mode,
      startedAt: sweep.started_at,
      checkpoint: sweep.checkpoint,
      records: sweep.records,
    }
  })
}

/**
 * Adds progress to the sweep and tells whether it is to make way for a full sweep of its resource
 * (`make_way_for`, set where that run was created); throws SweepLeaseLost when this attempt no longer
 * owns it.
 */
export async function saveSweepProgress(
  db: Kysely<Database>,
  key: SweepKey,
  progress: SweepProgress,
): Promise<SavedProgress> {
  const row = await db
    .updateTable('sync.run_resources')
    .set((eb) => ({
      records: eb('records', '+', progress.records ?? 0),
      pages: eb('pages', '+', progress.pages ?? 0),
      api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      reconciled: eb('reconciled', '+', progress.reconciled ?? 0),
      tombstoned: eb('tombstoned', '+', progress.tombstoned ?? 0),
      progress_at: sql<Date>`now()`,
      ...(progress.remoteCount === undefined ? {} : { remote_count: progress.remoteCount }),
      ...(progress.checkpoint === undefined ? {} : { checkpoint: JSON.stringify(progress.checkpoint) }),
    }))
    .where('run_id', '=', key.runId)
    .where('resource', '=', key.resource)
    .where('lease', '=', key.lease)
    .where('state', '=', 'running')
    // The full sweep it was marked for still waits (it may have been cancelled since).
    .returning(
      sql<boolean>`exists (
        select from sync.run_resources w
        where w.run_id = run_resources.make_way_for and w.resource = ${key.resource} and w.state = 'waiting'
      )`.as('make_way'),
    )
    .executeTakeFirst()
  if (!row) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
  return { makeWay: row.make_way }
}

/**
 * Puts the sweep held by `key` back to wait for its resource, from the start (its walk's counters too),
 * and starts the sweep waiting for it: an incremental sweep makes way for a full one. Throws
 * SweepLeaseLost when this attempt no longer owns it.
 */
export async function yieldSweep(db: Db, enqueue: EnqueueSweep, key: SweepKey, progress: SweepProgress = {}) {
  await db.transaction().execute(async (trx) => {
    await lockResources(trx, [key.resource])
    await lockRun(trx, key.runId)
    const result = await trx
      .updateTable('sync.run_resources')
      .set((eb) => ({
        status: 'queued',
        job_sent_at: null,
        lease: null,
        checkpoint: null,
        started_at: null,
        make_way_for: null,
        records: 0,
        pages: 0,
        progress_at: sql<Date>`now()`,
        api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      }))
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('lease', '=', key.lease)
      .where('state', 'in', TRANSITIONS.makeWay.from)
      .executeTakeFirst()
    if (result.numUpdatedRows === 0n) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
    await deriveRunStatus(trx, key.runId)
    await startWaitingSweep(trx, key.resource, enqueue)
  })
}
