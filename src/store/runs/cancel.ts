// A run cancelled by hand: every unfinished sweep of it ended as failed, whoever holds it.
import type { Kysely } from 'kysely'
import type { Db } from '../database.ts'
import type { Database } from '../schema.ts'
import { endSweep } from './end.ts'
import { lockResources, lockRun } from './locks.ts'
import { UNFINISHED_STATES } from './states.ts'
import type { EnqueueSweep } from './types.ts'

export type CancelRunResult =
  /** `resources`: the sweeps ended by the cancellation, in name order. */
  | { status: 'cancelled'; resources: string[] }
  /** Every sweep of the run had already ended. */
  | { status: 'finished' }
  | { status: 'unknown' }

async function unfinishedResources(trx: Kysely<Database>, runId: number): Promise<string[]> {
  const rows = await trx
    .selectFrom('sync.run_resources')
    .select('resource')
    .where('run_id', '=', runId)
    .where('state', 'in', UNFINISHED_STATES)
    .orderBy('resource')
    .execute()
  return rows.map((row) => row.resource)
}

/**
 * Ends every unfinished sweep of the run as failed with `cancelled by <by>`, in one transaction: the
 * run is then `failed`. A running sweep loses its lease and stops at its next checkpoint; each ended
 * sweep starts the next sweep waiting for its resource, as any end of a sweep does.
 */
export async function cancelRun(
  db: Db,
  enqueue: EnqueueSweep,
  runId: number,
  by: string,
): Promise<CancelRunResult> {
  return db.transaction().execute(async (trx) => {
    // A run's sweeps are all inserted with it and an unfinished one only ever finishes, so the locks
    // taken on the sweeps unfinished now cover every one still unfinished once they are held. Resource
    // locks first, then the run's row: the order every end of a sweep takes them in.
    await lockResources(trx, await unfinishedResources(trx, runId))
    if (!(await lockRun(trx, runId))) return { status: 'unknown' as const }
    const ended: string[] = []
    for (const resource of await unfinishedResources(trx, runId)) {
      const end = { status: 'failed' as const, error: `cancelled by ${by}` }
      if (await endSweep(trx, enqueue, runId, resource, null, end)) ended.push(resource)
    }
    return ended.length ? { status: 'cancelled' as const, resources: ended } : { status: 'finished' as const }
  })
}
