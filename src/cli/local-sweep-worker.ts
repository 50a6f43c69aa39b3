// `resync --wait` when no running crm-sync takes the run's sweeps: this process becomes one more
// sweep worker until the run ends. The jobs stay pg-boss's, so nothing is done twice: a sweep runs
// on whichever worker fetched its job, one sweep per resource is still all the database allows, and
// a sweep interrupted here (Ctrl-C) resumes from its checkpoint on the next worker.
import { hostname } from 'node:os'
import type { Job } from 'pg-boss'
import { createUpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { type JobQueue, QUEUES, recordChecks, sweepWorkOptions } from '../sync/job-queue.ts'
import { relayRunEnd } from '../sync/run-report.ts'
import { sweepEnqueuer } from '../sync/runs.ts'
import { sweepDepsFrom } from '../sync/sweep/deps.ts'
import { createSweepHandler } from '../sync/sweep/handler.ts'

/** Whether another process has the job queue open: pg-boss registers every instance it starts. */
export async function otherProcessesLive(boss: JobQueue): Promise<boolean> {
  const instances = await boss.getInstances()
  return instances.some(
    (instance) => instance.live && !(instance.pid === process.pid && instance.host === hostname()),
  )
}

/** A sweep job this process has taken. */
export interface LocalSweep {
  jobId: string
  runId: number
  resource: string
}

/** The sweeps this process works, for handing them back when it stops. */
export interface LocalSweeps {
  /** The sweep jobs whose handler is running here now. */
  running(): LocalSweep[]
  /** Resolves once no handler runs here any more, or after `ms`. */
  settled(ms: number): Promise<void>
}

export async function sweepHere(deps: {
  boss: JobQueue
  config: Config
  db: Db
  logger: Logger
}): Promise<LocalSweeps> {
  const { boss, config, db, logger } = deps
  const handle = createSweepHandler(
    sweepDepsFrom(config, {
      db,
      logger,
      metrics: createUpstreamMetrics(),
      enqueue: sweepEnqueuer(boss),
      queueChecks: recordChecks(boss, config.refreshCoalesceSeconds, new Set(config.resources)),
      relay: relayRunEnd(boss),
    }),
  )
  const running = new Map<string, LocalSweep>()
  const handlers = new Set<Promise<unknown>>()
  await boss.work(QUEUES.sweep.name, sweepWorkOptions(2), (jobs: Job<unknown>[]) => {
    for (const job of jobs) {
      const data = (job.data ?? {}) as Partial<LocalSweep>
      running.set(job.id, { jobId: job.id, runId: Number(data.runId), resource: String(data.resource) })
    }
    const handled = handle(jobs).finally(() => {
      for (const job of jobs) running.delete(job.id)
      handlers.delete(handled)
    })
    handlers.add(handled)
    return handled
  })
  return {
    running: () => [...running.values()],
    async settled(ms) {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms)
      })
      await Promise.race([Promise.allSettled([...handlers]), late])
      clearTimeout(timer)
    },
  }
}
