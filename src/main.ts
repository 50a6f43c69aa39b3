// Composition root of `crm-sync start` (and `npm start`): configuration, database, migrations,
// HTTP; later the receiver, workers and schedules. Everything is built here once and passed down.
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import type { Config } from './config/index.ts'
import { openDatabase } from './database-runtime.ts'
import { createHttpApp } from './http/app.ts'
import type { Logger } from './log.ts'
import { createReceiver } from './receiver/app.ts'
import { migrateToLatest, migrationFileCount } from './store/migrate.ts'
import { deliveryEnqueuer, type JobQueue, startJobQueue } from './sync/job-queue.ts'

export interface Running {
  port: number
  stop(): Promise<void>
}

export async function start(config: Config, logger: Logger): Promise<Running> {
  const database = await openDatabase(config, logger)
  let jobs: JobQueue | undefined
  try {
    const applied = await migrateToLatest(database.db)
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date')
    jobs = await startJobQueue(database.url, logger)
    const queue = jobs
    const receiver = config.webhookSecret
      ? createReceiver({
          db: database.db,
          enqueue: deliveryEnqueuer(queue),
          secret: config.webhookSecret,
          logger,
          counters: new Map(),
        })
      : null
    if (!receiver) logger.warn('WEBHOOK_SECRET is not set: the webhook receiver is off')
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: await migrationFileCount(),
      readiness: {
        jobs: async () => {
          if (!(await queue.isInstalled())) throw new Error('the job queue is not installed')
        },
      },
      routes: receiver ? [receiver] : [],
    })
    const server = await new Promise<Server>((resolve, reject) => {
      const created = serve({ fetch: app.fetch, port: config.port }, () => resolve(created as Server))
      created.once('error', reject)
    })
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    logger.info({ port }, 'listening')

    let stopping: Promise<void> | undefined
    return {
      port,
      stop() {
        stopping ??= (async () => {
          await new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeIdleConnections()
          })
          // Active jobs may finish; the rest stay queued for the next start or another replica.
          await queue.stop({ graceful: true, timeout: 20_000 })
          await database.close()
          logger.info('stopped')
        })()
        return stopping
      },
    }
  } catch (error) {
    await jobs?.stop({ graceful: false }).catch(() => {})
    await database.close().catch(() => {})
    throw error
  }
}

if (import.meta.main) {
  const { run } = await import('./cli/main.ts')
  process.exitCode = await run(['start', ...process.argv.slice(2)])
}
