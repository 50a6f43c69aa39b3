// Composition root of `crm-sync start` (and `npm start`): configuration, database, migrations, job
// queue, HTTP (receiver, admin API, metrics), hook registration, workers and schedules. Everything is
// built here once and passed down.
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import type { Hono } from 'hono'
import { createUpstreamClients, createUpstreamMetrics } from './api-client/index.ts'
import type { Config } from './config/index.ts'
import { openDatabase } from './database-runtime.ts'
import { createAdminApi } from './http/admin.ts'
import { createHttpApp } from './http/app.ts'
import { createMetricsRoute } from './http/metrics.ts'
import type { Logger } from './log.ts'
import { createMetrics } from './metrics/index.ts'
import { createReceiver } from './receiver/app.ts'
import type { Counters } from './receiver/counters.ts'
import { type HookKeeper, type HookStatus, keepHooksRegistered } from './receiver/hook-keeper.ts'
import { migrateToLatest, migrationFileCount } from './store/migrate.ts'
import { type JobQueue, startJobQueue } from './sync/job-queue.ts'
import { sweepEnqueuer } from './sync/runs.ts'
import { collectStatus } from './sync/status.ts'
import { startWorkers, type Workers } from './sync/workers.ts'

export interface Running {
  port: number
  stop(): Promise<void>
}

function listen(app: Hono, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port }, () => resolve(server as Server)) as Server
    server.once('error', reject)
  })
}

export async function start(config: Config, logger: Logger): Promise<Running> {
  const database = await openDatabase(config, logger)
  let jobs: JobQueue | undefined
  let hooks: HookKeeper | undefined
  let workers: Workers | undefined
  try {
    const applied = await migrateToLatest(database.db)
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date')
    const queue = await startJobQueue(database.url, logger)
    jobs = queue
    const upstreamMetrics = createUpstreamMetrics()
    const clients = createUpstreamClients(config, { db: database.db, logger, metrics: upstreamMetrics })
    const receiverCounters: Counters = new Map()
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
          logger,
          counters: receiverCounters,
        })
      : null
    if (!receiver) logger.warn('WEBHOOK_SECRET is not set: the webhook receiver is off')

    const admin = config.adminToken
      ? createAdminApi({
          token: config.adminToken,
          db: database.db,
          runs: {
            db: database.db,
            enqueue: sweepEnqueuer(queue),
            reservationEnabled: config.reservation !== null,
          },
          status: () => collectStatus({ db: database.db, boss: queue, config }),
          logger,
        })
      : null
    if (!admin) logger.info('ADMIN_TOKEN is not set: the admin API is off')

    if (config.publicUrl && config.webhookSecret) {
      hooks = keepHooksRegistered(
        database.db,
        clients.crm,
        { publicUrl: config.publicUrl, secret: config.webhookSecret, objectType: config.hookObjectType },
        logger,
      )
    }
    const hookStatus = (): HookStatus => hooks?.status() ?? { state: 'off', reason: 'PUBLIC_URL is not set' }

    const app = createHttpApp({
      db: database.db,
      expectedMigrations: await migrationFileCount(),
      readiness: {
        jobs: async () => {
          if (!(await queue.isInstalled())) throw new Error('the job queue is not installed')
        },
      },
      reports: { hooks: hookStatus },
      adminToken: config.adminToken,
      routes: [receiver, admin, createMetricsRoute(metrics)].filter((route) => route !== null),
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
    const server = await listen(app, config.port)
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    logger.info({ port }, 'listening')

    let stopping: Promise<void> | undefined
    return {
      port,
      stop() {
        stopping ??= (async () => {
          hooks?.stop()
          await new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeIdleConnections()
          })
          // After the server: deliveries acknowledged until the last moment are applied now.
          await workers?.stop()
          // Active jobs may finish; the rest stay queued for the next start or another replica.
          await queue.stop({ graceful: true, timeout: 20_000 })
          await database.close()
          logger.info('stopped')
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

if (import.meta.main) {
  const { run } = await import('./cli/main.ts')
  process.exitCode = await run(['start', ...process.argv.slice(2)])
}
