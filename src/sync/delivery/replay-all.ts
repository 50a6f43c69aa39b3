// A job of QUEUES.deliveryReplay: every rejected or failed delivery since a time replayed, as the
// status page's Replay button replays one (replay.ts), oldest first, a batch at a time. After each
// batch the replay's row records how many were handled and the last inbox id (its cursor): a retried
// job (its process died, its database went away) goes on after the cursor, and the page shows the
// progress. A replay cancelled on the page stops before its next batch; one with nothing left after its
// cursor is marked finished.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import { type Logger, withLogContext } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import {
  advanceDeliveryReplay,
  finishDeliveryReplay,
  nextReplayBatch,
  readDeliveryReplay,
} from '../../store/delivery-replays.ts'
import { replayDelivery } from './replay.ts'

// Old jobs outlive code: the payload is checked on entry.
const replayJob = z.object({ replayId: z.number().int().positive() })

type ReplayJobInput = Pick<Job<unknown>, 'id' | 'data'> & { signal?: AbortSignal }

export interface ReplayAllDeps {
  db: Db
  logger: Logger
  /** Deliveries per batch (200). */
  batchSize?: number
}

export function createReplayAllHandler(deps: ReplayAllDeps) {
  return async (jobs: ReplayJobInput[]): Promise<void> => {
    for (const job of jobs) {
      const parsed = replayJob.safeParse(job.data)
      if (!parsed.success) {
        deps.logger.error(
          { issues: parsed.error.issues },
          'delivery replay job with an unreadable payload; dropped',
        )
        continue
      }
      const { replayId } = parsed.data
      await withLogContext({ jobId: job.id, replayId }, () => replayAll(deps, replayId, job.signal))
    }
  }
}

async function replayAll(deps: ReplayAllDeps, replayId: number, signal?: AbortSignal): Promise<void> {
  const { db, logger } = deps
  for (;;) {
    const replay = await readDeliveryReplay(db, replayId)
    if (!replay) {
      logger.warn('delivery replay job for a replay that does not exist; dropped')
      return
    }
    if (replay.state !== 'running') {
      logger.info({ state: replay.state, done: replay.done }, 'delivery replay stopped')
      return
    }
    const ids = await nextReplayBatch(db, replay, deps.batchSize ?? 200)
    if (ids.length === 0) {
      await finishDeliveryReplay(db, replayId)
      logger.info({ done: replay.done, total: replay.total }, 'delivery replay finished')
      return
    }
    // On shutdown, or when the job's claim was lost: what was replayed is recorded, and the retry
    // goes on after it.
    let handled = 0
    for (const id of ids) {
      if (signal?.aborted) break
      await replayDelivery(db, id)
      handled++
    }
    if (handled > 0)
      await advanceDeliveryReplay(db, replayId, { handled, cursor: ids[handled - 1] as number })
    if (signal?.aborted)
      throw new Error('the delivery replay was interrupted; its retry goes on after its cursor')
  }
}
