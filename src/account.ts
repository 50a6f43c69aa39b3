// One account of the service (docs/accounts.md): its connections (every statement in its schemas), its
// view of the job queue (its own queues), its upstream clients with their budgets, its receiver, admin
// API, hooks, metrics and workers. The composition root (service.ts) builds one per account over the
// process's one pool and one job queue; a deployment without ACCOUNTS_FILE has one, with today's names.
import type { Hono } from 'hono'
import type pg from 'pg'
import { createUpstreamClients, createUpstreamMetrics, type UpstreamMetrics } from './api-client/index.ts'
import { accountPath } from './config/environment-accounts.ts'
import type { Config } from './config/index.ts'
import { type HookKeeper, type HookStatus, keepHooksRegistered } from './hooks/keeper.ts'
import { createAdminApi } from './http/admin.ts'
import { createStatusPage, type StatusPage } from './http/page/routes.ts'
import type { Logger } from './log.ts'
import { createMetrics, type Metrics } from './metrics/index.ts'
import { createReceiver } from './receiver/app.ts'
import { createReceiverCounters } from './receiver/counters.ts'
import { collectStatus } from './status/engine-status.ts'
import { forAccount } from './store/account-schemas.ts'
import type { Db } from './store/database.ts'
import { accountQueue } from './sync/account-queue.ts'
import { type JobQueue, sendDeliveryReplay } from './sync/job-queue.ts'
import { runDeps, sweepEnqueuer } from './sync/runs.ts'
import { startWorkers, type Workers } from './sync/workers.ts'

export interface AccountParts {
  /** null: the one account of a deployment without ACCOUNTS_FILE. */
  name: string | null
  config: Config
  db: Db
  queue: JobQueue
  metrics: Metrics
  upstreamMetrics: UpstreamMetrics
  receiver: Hono | null
  admin: Hono | null
  page: StatusPage | null
  hookStatus(): HookStatus
  /** The upstreams that refuse the account's key, with why: nothing syncs until it is fixed. */
  refusedKeys(): string[]
  /** Starts the workers (after the service listens); then `startPolls` once it does. */
  startWorkers(): Promise<Workers>
  workers: Workers | undefined
  stopHooks(): void
}

export interface AccountDeps {
  /** The process's connections and job queue, shared by every account. */
  db: Db
  /** The pool behind `db`; the receiver writes through it (receiver/inbox-writer.ts). */
  pool?: pg.Pool
  boss: JobQueue
  databaseUrl: string
  logger: Logger
  /** Node's process metrics, once per process: in the first account's registry. */
  processMetrics: boolean
}

export function createAccount(config: Config, deps: AccountDeps): AccountParts {
  const { name } = config.account
  const db = forAccount(deps.db, config.account.schemas)
  const queue = accountQueue(deps.boss, name)
  const logger = name === null ? deps.logger : deps.logger.child({ account: name })
  const upstreamMetrics = createUpstreamMetrics()
  const clientDeps = { db, logger, metrics: upstreamMetrics }
  const clients = createUpstreamClients(config, clientDeps)
  const receiverCounters = createReceiverCounters()
  const metrics = createMetrics({
    db,
    boss: queue,
    config,
    logger,
    receiverCounters,
    upstream: upstreamMetrics,
    processMetrics: deps.processMetrics,
    account: name,
  })
  let workers: Workers | undefined

  const receiver = config.webhookSecret
    ? createReceiver({
        db,
        onAccepted: (id) => workers?.wakeDeliveries(id),
        writer: { pool: deps.pool },
        secret: config.webhookSecret,
        previousSecret: config.webhookSecretPrevious,
        logger,
        counters: receiverCounters,
        basePath: accountPath(name),
      })
    : null
  if (!receiver)
    logger.warn(
      name === null
        ? 'WEBHOOK_SECRET is not set: the webhook receiver is off'
        : 'the account has no webhook secret in ACCOUNTS_FILE: its webhook receiver is off',
    )

  // What the admin API and the status page share: the same runs, the same status.
  const operator = {
    db,
    runs: runDeps(config, db, sweepEnqueuer(queue)),
    status: () => collectStatus({ db, boss: queue, config }),
    logger,
  }
  const admin = config.adminToken ? createAdminApi({ token: config.adminToken, ...operator }) : null

  let hooks: HookKeeper | undefined
  if (config.hooksUrl && config.webhookSecret) {
    hooks = keepHooksRegistered(
      db,
      clients.crm,
      {
        publicUrl: config.hooksUrl,
        secret: config.webhookSecret,
        objectType: config.hookObjectType,
        resources: config.resources,
      },
      logger,
      { checks: { boss: queue, intervalSeconds: config.hooksCheckIntervalSeconds }, observer: metrics },
    )
  }
  const hookStatus = (): HookStatus => hooks?.status() ?? { state: 'off', reason: 'PUBLIC_URL is not set' }
  const refused = () => [...upstreamMetrics.authFailures]
  const page = config.adminToken
    ? createStatusPage({
        token: config.adminToken,
        ...operator,
        hooks: hookStatus,
        refusedKeys: () => new Map(refused().map(([service, failure]) => [service, failure.message])),
        intervalSeconds: config.incrementalSyncIntervalSeconds,
        publicUrl: config.publicUrl,
        databaseUrl: deps.databaseUrl,
        sendReplay: (trx, replayId) => sendDeliveryReplay(queue, trx, replayId),
        basePath: accountPath(name),
        account: name,
      })
    : null

  const parts: AccountParts = {
    name,
    config,
    db,
    queue,
    metrics,
    upstreamMetrics,
    receiver,
    admin,
    page,
    hookStatus,
    refusedKeys: () =>
      refused().map(
        ([upstream, failure]) =>
          `${name === null ? '' : `${name}: `}${upstream} refused the API key at ${failure.at.toISOString()}: ${failure.message}`,
      ),
    async startWorkers() {
      workers = await startWorkers({
        db,
        boss: queue,
        clients,
        openClients: (signal) => createUpstreamClients(config, { ...clientDeps, signal }),
        config,
        logger,
        metrics: upstreamMetrics,
        observer: metrics,
      })
      parts.workers = workers
      return workers
    },
    workers: undefined,
    stopHooks: () => hooks?.stop(),
  }
  return parts
}
