// `resync --wait` when no running crm-sync takes the run's sweeps: this process becomes one more
// sweep worker until the run ends. The jobs stay pg-boss's, so nothing is done twice: a sweep runs
// on whichever worker fetched its job, one sweep per resource is still all the database allows, and
// a sweep interrupted here (Ctrl-C) resumes from its checkpoint on the next worker.
import { hostname } from 'node:os'
import { createUpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { type JobQueue, QUEUES, recordChecks, sweepWorkOptions } from '../sync/job-queue.ts'
import { sweepEnqueuer } from '../sync/runs.ts'
import { sweepDepsFrom } from '../sync/sweep/context.ts'
import { createSweepHandler } from '../sync/sweep/handler.ts'

/** Whether another process has the job queue open: pg-boss registers every instance it starts. */
export async function otherProcessesLive(boss: JobQueue): Promise<boolean> {
  const instances = await boss.getInstances()
  return instances.some(
    (instance) => instance.live && !(instance.pid === process.pid && instance.host === hostname()),
  )
}

export async function sweepHere(deps: { boss: JobQueue; config: Config; db: Db; logger: Logger }) {
  const { boss, config, db, logger } = deps
  await boss.work(
    QUEUES.sweep.name,
    sweepWorkOptions(2),
    createSweepHandler(
      sweepDepsFrom(config, {
        db,
        logger,
        metrics: createUpstreamMetrics(),
        enqueue: sweepEnqueuer(boss),
        queueChecks: recordChecks(boss, config.refreshCoalesceSeconds),
      }),
    ),
  )
}
