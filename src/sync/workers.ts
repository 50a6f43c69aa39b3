// The workers of one process: webhook deliveries, record refreshes, sweeps and replays of deliveries,
// plus the schedules that start incremental and full runs, retention, and the freshness polls
// (feed/polls.ts). Everything they need is passed in by the composition root.
import type { UpstreamClients, UpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import { type Logger, withLogContext } from '../log.ts'
import type { Db } from '../store/database.ts'
import { createDeadLetterHandler } from './dead-letter.ts'
import type { AppliedDelivery } from './delivery/apply.ts'
import { createReplayAllHandler } from './delivery/replay-all.ts'
import { DELIVERY_KIND, startDeliveryWorker } from './delivery/worker.ts'
import { startDetailsPass } from './details/index.ts'
import { startFreshnessPolls } from './feed/polls.ts'
import {
  deferRefresh,
  HEARTBEAT_REFRESH_SECONDS,
  type JobQueue,
  QUEUES,
  recordChecks,
  sweepWorkOptions,
} from './job-queue.ts'
import type { SyncObserver } from './observer.ts'
import { quietOptions } from './plan/refresh.ts'
import { queuedRefreshes } from './refresh/backlog.ts'
import { createCatchUp } from './refresh/catch-up.ts'
import { createRefreshHandler, type RefreshHandlerDeps } from './refresh/handler.ts'
import { startRetention } from './retention.ts'
import { createRunReportHandler } from './run-report.ts'
import { runDeps, sweepEnqueuer } from './runs.ts'
import { startSchedules } from './schedules.ts'
import { sweepDepsFrom } from './sweep/deps.ts'
import { createSweepHandler } from './sweep/handler.ts'

export interface WorkerDeps {
  db: Db
  boss: JobQueue
  clients: UpstreamClients
  /**
   * Clients like `clients` whose requests end once `signal` is aborted: the freshness polls' and the
   * details pass's, so that a stop does not wait for their retries.
   */
  openClients(signal: AbortSignal): UpstreamClients
  config: Config
  logger: Logger
  metrics: UpstreamMetrics
  /** Told about jobs handled, records applied and runs ended (the /metrics counters). */
  observer?: SyncObserver
  onDeliveryApplied?: (resource: string, source: AppliedDelivery['source'], receivedAt: Date) => void
  onRefreshApplied?: RefreshHandlerDeps['onApplied']
}

// NOTIFY wakes a worker when a job is created, but not when a delayed job becomes due or a backlog
// remains after a batch: the polling floor must stay short, not pg-boss's 30 s notify default.
const polling = { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }
/** How often a cascade check put off for a running full sweep looks again whether the sweep has ended. */
const CASCADE_CHECK_DEFER_SECONDS = 10

export interface Workers {
  /** A delivery was just committed to the inbox (its id): take it now rather than at the next poll. */
  wakeDeliveries(id?: number): void
  /** Starts the freshness polls (feed/polls.ts) and the details pass (details/), once the service listens. */
  startPolls(): void
  /**
   * Stops the schedules, retention, the freshness polls and the inbox workers: a delivery or a write in
   * flight finishes, the polls' requests are cut off.
   */
  stop(): Promise<void>
}

/**
 * The handler of a queue, with the queue's name on every line its jobs log, reporting each batch's
 * jobs as completed, or as failed when it throws (pg-boss retries them).
 */
function instrumented<J>(kind: string, handler: (jobs: J[]) => Promise<void>, observer?: SyncObserver) {
  return (jobs: J[]): Promise<void> =>
    withLogContext({ queue: kind }, async () => {
      try {
        await handler(jobs)
      } catch (error) {
        observer?.jobsDone?.(kind, 'failed', jobs.length)
        throw error
      }
      observer?.jobsDone?.(kind, 'completed', jobs.length)
    })
}

export async function startWorkers(deps: WorkerDeps): Promise<Workers> {
  const { db, boss, clients, config, logger, metrics, observer } = deps
  const applied = observer?.recordsApplied?.bind(observer)
  const mirrored = new Set<string>(config.resources)
  const queueChecks = recordChecks(boss, config.refreshCoalesceSeconds, mirrored)
  const deliveries = startDeliveryWorker({
    db,
    boss,
    logger: logger.child({ queue: DELIVERY_KIND }),
    refreshCoalesceSeconds: config.refreshCoalesceSeconds,
    mirrored,
    observer,
    onApplied: ({ resource, source, receivedAt }) => {
      applied?.(resource, source, 1, receivedAt)
      deps.onDeliveryApplied?.(resource, source, receivedAt)
    },
  })
  // Refreshes wait for the shared request budget; more of them in flight only queue up there.
  await boss.work(
    QUEUES.refresh.name,
    { localConcurrency: 8, heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS, ...polling },
    instrumented(
      QUEUES.refresh.name,
      createRefreshHandler({
        db,
        clients,
        queueChecks,
        defer: (job) => deferRefresh(boss, job, CASCADE_CHECK_DEFER_SECONDS),
        catchUp: createCatchUp({
          db,
          logger: logger.child({ queue: QUEUES.refresh.name }),
          reader: (resource) => (resource.service === 'crm' ? clients.crm : clients.reservation),
          queued: queuedRefreshes(boss),
          minBacklog: 2,
          skewSeconds: config.syncLookbackSeconds,
          onApplied: (resource, records) => applied?.(resource, 'fetch', records),
        }),
        logger: logger.child({ queue: QUEUES.refresh.name }),
        onApplied: (resource, source, receivedAt) => {
          applied?.(resource, source, 1, receivedAt)
          deps.onRefreshApplied?.(resource, source, receivedAt)
        },
        onSkipped: (resource) => observer?.refreshSkipped?.(resource),
        quiet: quietOptions(config),
      }),
      observer,
    ),
  )
  // Sweeps are bound by their service's request budget: four of each service at a time.
  const sweepLogger = logger.child({ queue: QUEUES.sweep.name })
  const enqueue = sweepEnqueuer(boss)
  await boss.work(
    QUEUES.sweep.name,
    sweepWorkOptions(4),
    instrumented(
      QUEUES.sweep.name,
      createSweepHandler(
        sweepDepsFrom(config, { db, logger: sweepLogger, metrics, enqueue, queueChecks, observer }),
      ),
      observer,
    ),
  )
  // Replays of deliveries asked on the status page: one at a time in this process.
  await boss.work(
    QUEUES.deliveryReplay.name,
    { localConcurrency: 1, heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS, pollingIntervalSeconds: 2 },
    instrumented(
      QUEUES.deliveryReplay.name,
      createReplayAllHandler({ db, logger: logger.child({ queue: QUEUES.deliveryReplay.name }) }),
      observer,
    ),
  )
  await boss.work(
    QUEUES.deadLetter.name,
    { pollingIntervalSeconds: 5 },
    instrumented(
      QUEUES.deadLetter.name,
      createDeadLetterHandler({ db, enqueue, logger, observer }),
      observer,
    ),
  )
  // "run finished" of runs that a command ended (run-report.ts).
  await boss.work(
    QUEUES.runReport.name,
    { pollingIntervalSeconds: 2 },
    instrumented(QUEUES.runReport.name, createRunReportHandler({ db, logger, observer }), observer),
  )
  const schedules = await startSchedules({
    boss,
    runs: runDeps(config, db, enqueue),
    incrementalIntervalSeconds: config.incrementalSyncIntervalSeconds,
    fullSyncCron: config.fullSyncCron,
    logger,
  })
  const retention = startRetention({
    db,
    retention: config.retention,
    logger: logger.child({ task: 'retention' }),
    observer,
  })
  let polls: { stop(): Promise<void> } | undefined
  let details: { stop(): Promise<void> } | null | undefined
  const stopping = new AbortController()
  return {
    wakeDeliveries: (id) => deliveries.wake(id),
    startPolls() {
      if (polls) return
      const polled = deps.openClients(stopping.signal)
      polls = startFreshnessPolls({
        db,
        boss,
        clients: polled,
        config,
        logger,
        onApplied: (resource, records) => applied?.(resource, 'fetch', records),
      })
      details = startDetailsPass({
        db,
        crm: polled.crm,
        config,
        logger,
        onRead: observer?.detailsRead?.bind(observer),
      })
    },
    async stop() {
      schedules.stop()
      const stopped = Promise.all([deliveries.stop(), retention.stop(), polls?.stop(), details?.stop()])
      stopping.abort() // after the loops know they stop: a poll cut off now is no failure
      await stopped
    },
  }
}
