// A sweep under way: claimed by one attempt of its job, its progress saved, made to wait for a full one.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../database.ts'
import type { Database } from '../schema.ts'
import { deriveRunStatus, lockResources, lockRun, UNFINISHED } from './locks.ts'
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
      .where('status', 'in', UNFINISHED)
      .where('job_sent_at', 'is not', null) // a waiting sweep has no job: a stale one is not its own
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
 * Adds progress to the sweep and tells whether a full sweep of its resource is waiting for it; throws
 * SweepLeaseLost when this attempt no longer owns it.
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
    .where('status', '=', 'running')
    .returning(
      sql<boolean>`exists (
        select from sync.run_resources w join sync.runs r on r.id = w.run_id
        where w.resource = ${key.resource} and w.status = 'queued' and w.job_sent_at is null
          and r.mode = 'full'
      )`.as('full_waiting'),
    )
    .executeTakeFirst()
  if (!row) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
  return { fullWaiting: row.full_waiting }
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
        records: 0,
        pages: 0,
        progress_at: sql<Date>`now()`,
        api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      }))
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('lease', '=', key.lease)
      .where('status', '=', 'running')
      .executeTakeFirst()
    if (result.numUpdatedRows === 0n) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
    await deriveRunStatus(trx, key.runId)
    await startWaitingSweep(trx, key.resource, enqueue)
  })
}
