// The workers of one process: webhook deliveries, record refreshes and sweeps, plus the schedules
// that start incremental and full runs. Everything they need is passed in by the composition root.
import type { UpstreamClients, UpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { createDeadLetterHandler } from './handlers/dead-letter.ts'
import { createDeliveryHandler, type DeliveryHandlerDeps } from './handlers/delivery.ts'
import { createRefreshHandler, type RefreshHandlerDeps } from './handlers/refresh.ts'
import { createSweepHandler } from './handlers/sweep.ts'
import { type JobQueue, QUEUES } from './job-queue.ts'
import { sweepEnqueuer } from './runs.ts'
import { startSchedules } from './schedules.ts'
import { sweepDepsFrom } from './sweep-context.ts'

export interface WorkerDeps {
  db: Db
  boss: JobQueue
  clients: UpstreamClients
  config: Config
  logger: Logger
  metrics: UpstreamMetrics
  onDeliveryApplied?: DeliveryHandlerDeps['onApplied']
  onRefreshApplied?: RefreshHandlerDeps['onApplied']
}

// NOTIFY wakes a worker when a job is created, but not when a delayed job becomes due or a backlog
// remains after a batch: the polling floor must stay short, not pg-boss's 30 s notify default.
const polling = { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }

export interface Workers {
  stop(): void
}

export async function startWorkers(deps: WorkerDeps): Promise<Workers> {
  const { db, boss, clients, config, logger, metrics } = deps
  await boss.work(
    QUEUES.delivery.name,
    { localConcurrency: 4, batchSize: 20, burstWhenBatchFull: true, ...polling },
    createDeliveryHandler({
      db,
      boss,
      logger: logger.child({ queue: QUEUES.delivery.name }),
      refreshCoalesceSeconds: deps.config.refreshCoalesceSeconds,
      onApplied: deps.onDeliveryApplied,
    }),
  )
  // Refreshes wait for the shared request budget; more of them in flight only queue up there.
  await boss.work(
    QUEUES.refresh.name,
    { localConcurrency: 8, ...polling },
    createRefreshHandler({
      db,
      clients,
      logger: logger.child({ queue: QUEUES.refresh.name }),
      onApplied: deps.onRefreshApplied,
    }),
  )
  // Sweeps are bound by the request budget, not by this process: two at a time keep pages flowing.
  await boss.work(
    QUEUES.sweep.name,
    { localConcurrency: 2, pollingIntervalSeconds: 1 },
    createSweepHandler(
      sweepDepsFrom(config, { db, logger: logger.child({ queue: QUEUES.sweep.name }), metrics }),
    ),
  )
  await boss.work(
    QUEUES.deadLetter.name,
    { pollingIntervalSeconds: 5 },
    createDeadLetterHandler({ db, logger }),
  )
  const schedules = await startSchedules({
    boss,
    runs: { db, enqueue: sweepEnqueuer(boss), reservationEnabled: config.reservation !== null },
    incrementalIntervalSeconds: config.incrementalSyncIntervalSeconds,
    fullSyncCron: config.fullSyncCron,
    logger,
  })
  return schedules
}
