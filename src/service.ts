// Composition root of `crm-sync start` (and `npm start`): configuration, database, migrations, job
// queue, HTTP (receiver, admin API, metrics), hook registration, workers and schedules. Everything is
// built here once and passed down. The CLI (cli/start.ts) imports it; it imports nothing of the CLI.
import { type AccountParts, createAccount } from './account.ts'
import { accountConfigs } from './config/account-config.ts'
import type { Config } from './config/index.ts'
import { openDatabase } from './database/runtime.ts'
import { adminByAccount, combinedMetrics } from './http/accounts.ts'
import { createHttpApp } from './http/app.ts'
import { createMetricsRoute } from './http/metrics.ts'
import { statusPages } from './http/page/accounts.ts'
import { closeServer, listen } from './http/server.ts'
import type { Logger } from './log.ts'
import { DELIVERY_BUDGET_MS } from './receiver/inbox-writer.ts'
import { forAccount } from './store/account-schemas.ts'
import { migrateToLatest, migrationFileCount } from './store/migrate.ts'
import { maintainPublication } from './store/publication.ts'
import { type JobQueue, startJobQueue } from './sync/job-queue.ts'

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
  let accounts: AccountParts[] = []
  try {
    const configs = accountConfigs(config)
    for (const account of configs) {
      const applied = await migrateToLatest(forAccount(database.db, account.account.schemas), { logger })
      logger.info(
        { applied, ...(account.account.name ? { account: account.account.name } : {}) },
        applied.length ? 'migrations applied' : 'schema up to date',
      )
    }
    if (config.mirrorPublication)
      await maintainPublication(
        database.db,
        config.mirrorPublication,
        logger,
        configs.map((account) => account.account.schemas),
      )
    const queue = await startJobQueue(
      database.url,
      logger,
      configs.map((account) => account.account.name),
      { pruneSchedules: true },
    )
    jobs = queue
    const several = configs.length > 1
    accounts = configs.map((account, index) =>
      createAccount(account, {
        db: database.db,
        pool: database.pool,
        boss: queue,
        databaseUrl: database.url,
        logger,
        processMetrics: !several && index === 0,
      }),
    )
    if (!config.adminToken) logger.info('ADMIN_TOKEN is not set: the admin API is off')

    const [first] = accounts as [AccountParts]
    const metrics = several ? combinedMetrics(accounts.map((account) => account.metrics)) : first.metrics
    const admin = several ? adminByAccount(accounts) : first.admin
    // With ACCOUNTS_FILE, an index of the accounts at `/` and each one's page under /accounts/<name>/.
    const pages = statusPages(accounts, { token: config.adminToken, publicUrl: config.publicUrl, logger })
    const app = createHttpApp({
      db: database.db,
      migrated: accounts.map((account) => account.db),
      expectedMigrations: await migrationFileCount(),
      readiness: {
        jobs: async () => {
          if (!(await queue.isInstalled())) throw new Error('the job queue is not installed')
        },
        // An upstream that refuses the key: nothing will sync until the key is fixed.
        upstream_keys: async () => {
          const refused = accounts.flatMap((account) => account.refusedKeys())
          if (refused.length > 0) throw new Error(refused.join('; '))
        },
      },
      reports: {
        hooks: several
          ? () => Object.fromEntries(accounts.map((account) => [account.name, account.hookStatus()]))
          : first.hookStatus,
      },
      adminToken: config.adminToken,
      logger,
      routes: [
        ...accounts.map((account) => account.receiver),
        admin,
        ...pages.routes,
        createMetricsRoute(metrics, { token: config.metricsRequireToken ? config.adminToken : null }),
      ].filter((route) => route !== null),
    })
    const workers = await Promise.all(accounts.map((account) => account.startWorkers()))
    const server = await listen(app, { port: config.port, host: config.host })
    // The polls last: a start that cannot listen fails before they send a request.
    for (const started of workers) started.startPolls()
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    logger.info(
      { port, host: typeof address === 'object' && address ? address.address : config.host },
      'listening',
    )
    const stopWorkers = () => Promise.all(workers.map((started) => started.stop()))

    let stopping: Promise<StopOutcome> | undefined
    return {
      port,
      stop({ deadline = Date.now() + DEFAULT_SHUTDOWN_MS } = {}) {
        stopping ??= (async () => {
          const workUntil = deadline - Math.min(CLOSE_RESERVE_MS, (deadline - Date.now()) / 4)
          for (const account of accounts) account.stopHooks()
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
          const [httpInTime, workersInTime, jobsInTime] = await Promise.all([
            http,
            endsBy(stopWorkers(), workUntil, logger, 'the workers (deliveries, polls, retention)'),
            endsBy(jobs, workUntil, logger, 'the job queue'),
          ])
          const unfinished = Object.entries({
            http: httpInTime,
            workers: workersInTime,
            jobs: jobsInTime,
          })
            .filter(([, inTime]) => !inTime)
            .map(([step]) => step)
          const close = (async () => {
            await pages.close()
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
    for (const account of accounts) account.stopHooks()
    await Promise.all(accounts.map((account) => account.workers?.stop()))
    await jobs?.stop({ graceful: false }).catch(() => {})
    await database.close().catch(() => {})
    throw error
  }
}
