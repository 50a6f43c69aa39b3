// A sweep handed back by a process that stops (Ctrl-C on `resync --wait`): its job is failed for a
// retry, and the sweep waits for whichever worker takes that retry. It shows so at once (`queued`, its
// job still sent), not `running` until a worker claims it again.
import { sql } from 'kysely'
import type { Db } from '../database.ts'
import { deriveRunStatus, lockResources, lockRun } from './locks.ts'
import { TRANSITIONS } from './states.ts'
import type { SweepJob, SweepKey } from './types.ts'

/** The running sweeps among `sweeps`, each with the lease of the attempt that holds it now. */
export async function readSweepLeases(db: Db, sweeps: readonly SweepJob[]): Promise<SweepKey[]> {
  if (sweeps.length === 0) return []
  const rows = await db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource', 'lease'])
    .where('state', '=', 'running')
    .where((eb) =>
      eb.or(
        sweeps.map((sweep) => eb.and([eb('run_id', '=', sweep.runId), eb('resource', '=', sweep.resource)])),
      ),
    )
    .execute()
  return rows.flatMap((row) =>
    row.lease === null ? [] : [{ runId: row.run_id, resource: row.resource, lease: row.lease }],
  )
}

/**
 * Puts the sweep held by `key` back to `queued` once its job has been handed back: it keeps its job
 * (sent), its start, checkpoint and counts, so the next worker resumes it; it loses its lease, so the
 * attempt handed back can write no more. Nothing happens when another attempt holds it by now (a
 * worker took the retry) or it has ended. Returns whether it was put back.
 */
export async function handBackSweep(db: Db, key: SweepKey): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await lockResources(trx, [key.resource])
    await lockRun(trx, key.runId)
    const result = await trx
      .updateTable('sync.run_resources')
      .set({ status: 'queued', lease: null, progress_at: sql<Date>`now()` })
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('lease', '=', key.lease)
      .where('state', 'in', TRANSITIONS.handBack.from)
      .executeTakeFirst()
    if (result.numUpdatedRows === 0n) return false
    await deriveRunStatus(trx, key.runId)
    return true
  })
}
