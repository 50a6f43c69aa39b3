// Composition root of `crm-sync start` (and `npm start`): configuration, database, migrations, job
// queue, HTTP (receiver, admin API, metrics), hook registration, workers and schedules. Everything is
// built here once and passed down. The CLI (cli/start.ts) imports it; it imports nothing of the CLI.
import { createUpstreamClients, createUpstreamMetrics } from './api-client/index.ts'
import type { Config } from './config/index.ts'
import { openDatabase } from './database/runtime.ts'
import { type HookKeeper, type HookStatus, keepHooksRegistered } from './hooks/keeper.ts'
import { createAdminApi } from './http/admin.ts'
import { createHttpApp } from './http/app.ts'
import { createMetricsRoute } from './http/metrics.ts'
import { createStatusPage } from './http/page/routes.ts'
import { closeServer, listen } from './http/server.ts'
import type { Logger } from './log.ts'
import { createMetrics } from './metrics/index.ts'
import { createReceiver } from './receiver/app.ts'
import { createReceiverCounters } from './receiver/counters.ts'
import { DELIVERY_BUDGET_MS } from './receiver/inbox-writer.ts'
import { collectStatus } from './status/engine-status.ts'
import { migrateToLatest, migrationFileCount } from './store/migrate.ts'
import { type JobQueue, sendDeliveryReplay, startJobQueue } from './sync/job-queue.ts'
import { runDeps, sweepEnqueuer } from './sync/runs.ts'
import { startWorkers, type Workers } from './sync/workers.ts'

/** 'deadline': the stop had to cut connections or leave work unfinished to end in time. */
export type StopOutcome = 'stopped' | 'deadline'

export interface Running {
  port: number
  /**
   * Stops taking deliveries and jobs, and ends by `deadline` (epoch ms; 30 s from now unless given):
   * connections still open then are closed, and unfinished jobs stay queued for the next start.
   */
  stop(options?: { deadline?: number }): Promise<StopOutcome>
}

const DEFAULT_SHUTDOWN_MS = 30_000
// Requests under way at the stop may finish for this long: twice a delivery's budget for being
// stored, so that a delivery whose body has come is answered (200 or 503) rather than cut off.
const HTTP_DRAIN_MS = 2 * DELIVERY_BUDGET_MS
// The end of the shutdown's time kept for closing the pools and the embedded database.
const CLOSE_RESERVE_MS = 5_000
// How long active jobs may go on; a sweep resumes from its checkpoint at the next start.
const JOB_GRACE_MS = 20_000

/** Whether `work` ends, either way, by `until` (epoch ms). A failure is logged, not thrown. */
async function endsBy(work: Promise<unknown>, until: number, logger: Logger, what: string): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, until - Date.now()), false)
  })
  const ended = work.then(
    () => true,
    (error: unknown) => {
      logger.error({ err: error }, `${what} failed while stopping`)
      return true
    },
  )
  try {
    return await Promise.race([ended, late])
  } finally {
    clearTimeout(timer)
  }
}

export async function start(config: Config, logger: Logger): Promise<Running> {
  const database = await openDatabase(config, logger)
  let jobs: JobQueue | undefined
  let hooks: HookKeeper | undefined
  let workers: Workers | undefined
  try {
    const applied = await migrateToLatest(database.db, { logger, publication: config.mirrorPublication })
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date')
    const queue = await startJobQueue(database.url, logger)
    jobs = queue
    const upstreamMetrics = createUpstreamMetrics()
    const clients = createUpstreamClients(config, { db: database.db, logger, metrics: upstreamMetrics })
    const receiverCounters = createReceiverCounters()
    const metrics = createMetrics({
      db: database.db,
      boss: queue,
      config,
      logger,
      receiverCounters,
      upstream: upstreamMetrics,
    })

    const receiver = config.webhookSecret
      ? createReceiver({
          db: database.db,
          onAccepted: () => workers?.wakeDeliveries(),
          secret: config.webhookSecret,
          previousSecret: config.webhookSecretPrevious,
          logger,
          counters: receiverCounters,
        })
      : null
    if (!receiver) logger.warn('WEBHOOK_SECRET is not set: the webhook receiver is off')

    // What the admin API and the status page share: the same runs, the same status.
    const operator = {
      db: database.db,
      runs: runDeps(config, database.db, sweepEnqueuer(queue)),
      status: () => collectStatus({ db: database.db, boss: queue, config }),
      logger,
    }
    const admin = config.adminToken ? createAdminApi({ token: config.adminToken, ...operator }) : null
    if (!admin) logger.info('ADMIN_TOKEN is not set: the admin API is off')

    if (config.publicUrl && config.webhookSecret) {
      hooks = keepHooksRegistered(
        database.db,
        clients.crm,
        {
          publicUrl: config.publicUrl,
          secret: config.webhookSecret,
          objectType: config.hookObjectType,
          resources: config.resources,
        },
        logger,
        {
          checks: { boss: queue, intervalSeconds: config.hooksCheckIntervalSeconds },
          observer: metrics,
        },
      )
    }
    const hookStatus = (): HookStatus => hooks?.status() ?? { state: 'off', reason: 'PUBLIC_URL is not set' }
    const page = config.adminToken
      ? createStatusPage({
          token: config.adminToken,
          ...operator,
          hooks: hookStatus,
          refusedKeys: () =>
            new Map(
              [...upstreamMetrics.authFailures].map(([service, failure]) => [service, failure.message]),
            ),
          intervalSeconds: config.incrementalSyncIntervalSeconds,
          publicUrl: config.publicUrl,
          databaseUrl: database.url,
          sendReplay: (trx, replayId) => sendDeliveryReplay(queue, trx, replayId),
        })
      : null

    const app = createHttpApp({
      db: database.db,
      expectedMigrations: await migrationFileCount(),
      readiness: {
        jobs: async () => {
          if (!(await queue.isInstalled())) throw new Error('the job queue is not installed')
        },
        // An upstream that refuses the key: nothing will sync until the key is fixed.
        upstream_keys: async () => {
          const refused = [...upstreamMetrics.authFailures].map(
            ([upstream, failure]) =>
              `${upstream} refused the API key at ${failure.at.toISOString()}: ${failure.message}`,
          )
          if (refused.length > 0) throw new Error(refused.join('; '))
        },
      },
      reports: { hooks: hookStatus },
      adminToken: config.adminToken,
      logger,
      routes: [
        receiver,
        admin,
        page?.routes ?? null,
        createMetricsRoute(metrics, { token: config.metricsRequireToken ? config.adminToken : null }),
      ].filter((route) => route !== null),
    })
    workers = await startWorkers({
      db: database.db,
      boss: queue,
      clients,
      config,
      logger,
      metrics: upstreamMetrics,
      observer: metrics,
    })
    const server = await listen(app, { port: config.port, host: config.host })
    // The polls last: a start that cannot listen fails before they send a request.
    workers.startPolls()
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    logger.info(
      { port, host: typeof address === 'object' && address ? address.address : config.host },
      'listening',
    )

    let stopping: Promise<StopOutcome> | undefined
    return {
      port,
      stop({ deadline = Date.now() + DEFAULT_SHUTDOWN_MS } = {}) {
        stopping ??= (async () => {
          const workUntil = deadline - Math.min(CLOSE_RESERVE_MS, (deadline - Date.now()) / 4)
          hooks?.stop()
          // HTTP, the delivery workers and the job queue stop side by side, none waiting for another:
          // a client that never finishes its request must not hold back the rest. Deliveries
          // acknowledged meanwhile stay in the inbox for the next start or another replica.
          const drainUntil = Math.min(Date.now() + HTTP_DRAIN_MS, workUntil)
          const http = closeServer(server, drainUntil).then((cut) => {
            if (cut === 0) return true
            logger.warn({ connections: cut }, 'closed connections whose requests had not ended')
            // Cut once the drain every request gets was over: in time. Cut by the deadline: not.
            return drainUntil < workUntil
          })
          // Active jobs may finish (20 s at most, and before the deadline); the rest stay queued. The
          // pool stays open for the deliveries' work, and is closed below.
          const graceMs = Math.min(JOB_GRACE_MS, workUntil - Date.now() - 1_000)
          const jobs = queue.stop({ graceful: true, close: false, timeout: graceMs })
          const [httpInTime, deliveriesInTime, jobsInTime] = await Promise.all([
            http,
            endsBy(workers?.stop() ?? Promise.resolve(), workUntil, logger, 'the delivery workers'),
            endsBy(jobs, workUntil, logger, 'the job queue'),
          ])
          const unfinished = Object.entries({
            http: httpInTime,
            deliveries: deliveriesInTime,
            jobs: jobsInTime,
          })
            .filter(([, inTime]) => !inTime)
            .map(([step]) => step)
          const close = (async () => {
            await page?.close()
            await queue.stop({ close: true })
            await database.close()
          })()
          if (!(await endsBy(close, deadline, logger, 'closing the database'))) unfinished.push('database')
          if (unfinished.length === 0) {
            logger.info('stopped')
            return 'stopped'
          }
          logger.error(
            { unfinished, deadline: new Date(deadline).toISOString() },
            'the shutdown reached its deadline: connections closed, unfinished work left queued',
          )
          return 'deadline'
        })()
        return stopping
      },
    }
  } catch (error) {
    hooks?.stop()
    await workers?.stop()
    await jobs?.stop({ graceful: false }).catch(() => {})
    await database.close().catch(() => {})
    throw error
  }
}
