// A run that a command ended (`crm-sync cancel`, `resync --wait` working the run's sweeps itself, a
// sweep it gave up on) is logged in that command's output; the service's log gets its "run finished"
// line too, through a job that one replica takes up: a log that holds every run, whoever ended it.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { type JobQueue, QUEUES } from './job-queue.ts'
import type { SyncObserver } from './observer.ts'
import { type RelayRunEnd, reportRunEnd } from './sweep/run-end.ts'

const reportJob = z.object({ runId: z.number().int().positive() })

/** How a command hands the end of a run on to the service. */
export const relayRunEnd =
  (boss: JobQueue): RelayRunEnd =>
  async (runId) => {
    await boss.send(QUEUES.runReport.name, { runId })
  }

/** The service's side: the "run finished" line and the observer, for a run another process ended. */
export function createRunReportHandler(deps: { db: Db; logger: Logger; observer?: SyncObserver }) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      const report = reportJob.safeParse(job.data)
      if (report.success) await reportRunEnd(deps, report.data.runId, { endedBy: 'a command' })
      else deps.logger.warn({ data: job.data }, 'a run report without a run id; ignored')
    }
  }
}
