// Jobs that used up their retries. A sweep that lands here would hold its resource until it went
// stale; it is ended as failed at once. Other kinds (refreshes) are logged, and the next incremental
// run repairs what they would have written. (Deliveries are not pg-boss jobs: one that fails every
// attempt is kept in the inbox as `failed`, see delivery/worker.ts.)
import type { Job } from 'pg-boss'
import { z } from 'zod'
import { type Logger, withLogContext } from '../log.ts'
import type { Db } from '../store/database.ts'
import { abandonSweep, type EnqueueSweep } from '../store/runs.ts'
import { recordJobContext } from './job-log-context.ts'
import type { SyncObserver } from './observer.ts'
import { reportRunEnd } from './sweep/run-end.ts'

const sweepJob = z.object({ runId: z.number().int().positive(), resource: z.string().min(1) })

export interface DeadLetterDeps {
  db: Db
  /** Sends the job of the sweep that waited for the abandoned one's resource. */
  enqueue: EnqueueSweep
  logger: Logger
  observer?: SyncObserver
}

export function createDeadLetterHandler(deps: DeadLetterDeps) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      await withLogContext(recordJobContext(job), async () => {
        const sweep = sweepJob.safeParse(job.data)
        if (sweep.success) {
          const { runId, resource } = sweep.data
          const reason = 'the sweep job failed after all its retries'
          const ended = await abandonSweep(deps.db, deps.enqueue, runId, resource, reason)
          if (ended?.runEnded) await reportRunEnd(deps, runId)
        }
        deps.logger.error({ data: job.data }, 'a job failed after all its retries')
      })
    }
  }
}
