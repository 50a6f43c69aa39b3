// Jobs that used up their retries. A sweep that lands here would hold its resource until it went
// stale; it is ended as failed at once. Other kinds are logged; their inbox rows stay `accepted`
// (visible for inspection) and the next incremental run repairs what they would have written.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import type { Logger } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import { abandonSweep } from '../../store/runs.ts'

const sweepJob = z.object({ runId: z.number().int().positive(), resource: z.string().min(1) })

export function createDeadLetterHandler({ db, logger }: { db: Db; logger: Logger }) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      const sweep = sweepJob.safeParse(job.data)
      if (sweep.success) {
        await abandonSweep(
          db,
          sweep.data.runId,
          sweep.data.resource,
          'the sweep job failed after all its retries',
        )
      }
      logger.error({ jobId: job.id, data: job.data }, 'a job failed after all its retries')
    }
  }
}
