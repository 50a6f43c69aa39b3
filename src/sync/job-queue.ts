// pg-boss, the job queue on PostgreSQL: queues are created at start with explicit policies.
import { CompiledQuery, type Kysely } from 'kysely'
import { PgBoss, type Queue } from 'pg-boss'
import type { Logger } from '../log.ts'
import type { Database } from '../store/schema.ts'
import { accountQueue } from './account-queue.ts'

export const JOB_SCHEMA = 'pgboss'

export const DEAD_LETTER_QUEUE = 'dead-letter'

/** One entry per job kind. Old jobs outlive code: handlers validate their payload on entry. */
export const QUEUES = {
  deadLetter: { name: DEAD_LETTER_QUEUE, retentionSeconds: 30 * 86_400, deleteAfterSeconds: 30 * 86_400 },
  // Fetch one record and apply it. Stately, keyed by resource and id: a burst of deliveries for one
  // record costs one fetch in flight plus one queued, and the queued one runs after the active one.
  // A refresh of a process that died is failed once its heartbeat is 10 s stale (not at its 300 s
  // expiry), so that it, and the newer refreshes of its record it holds back, run again at once.
  refresh: {
    name: 'record-refresh',
    policy: 'stately',
    notify: true,
    retryLimit: 10,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 300,
    heartbeatSeconds: 10,
    expireInSeconds: 300,
    deadLetter: DEAD_LETTER_QUEUE,
  },
  // One resource of one run (incremental or full sweep). A sweep records its own failure in the run
  // and completes; a retry happens only when a process died mid-sweep (heartbeat missed) or the
  // database went away, and then resumes from the run's checkpoint. A run asked for survives any
  // number of crashes within an hour (`retryWindowSeconds`), each taken up again within seconds: a
  // crash is no reason to wait longer before the next attempt.
  sweep: {
    name: 'resource-sweep',
    policy: 'standard',
    retryLimit: 400,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 10,
    heartbeatSeconds: 10,
    expireInSeconds: 6 * 3600,
    deadLetter: DEAD_LETTER_QUEUE,
  },
  // Starts an incremental run of every enabled resource; sent at most once per interval across replicas.
  // A tick of a process that died is failed once its heartbeat is 10 s stale, not at its expiry: a
  // singleton queue takes no other tick while one is active.
  incrementalTick: {
    name: 'incremental-tick',
    policy: 'singleton',
    retryLimit: 0,
    heartbeatSeconds: 10,
    expireInSeconds: 600,
  },
  // Starts a full run; scheduled with FULL_SYNC_CRON (pg-boss schedules are cluster-wide).
  fullTick: {
    name: 'full-tick',
    policy: 'singleton',
    retryLimit: 0,
    heartbeatSeconds: 10,
    expireInSeconds: 600,
  },
  // Checks crm-sync's hooks in the CRM; sent at most once per HOOKS_CHECK_INTERVAL across replicas
  // (src/hooks/checks.ts).
  hooksCheck: {
    name: 'hooks-check',
    policy: 'singleton',
    retryLimit: 0,
    heartbeatSeconds: 10,
    expireInSeconds: 600,
  },
  // Replays every rejected or failed delivery since a time (the status page; delivery/replay-all.ts),
  // saving its cursor after each batch of 200. A job whose process died (heartbeat 10 s stale) or
  // whose database went away is retried, and goes on after the cursor: only the batch under way is
  // replayed again, which changes nothing in the mirror (delivery/replay.ts).
  deliveryReplay: {
    name: 'delivery-replay',
    policy: 'standard',
    retryLimit: 50,
    retryDelay: 1,
    retryBackoff: true,
    retryDelayMax: 60,
    heartbeatSeconds: 10,
    expireInSeconds: 6 * 3600,
    deadLetter: DEAD_LETTER_QUEUE,
  },
  // "run finished" of a run that a command ended (`cancel`, `resync --wait` working its sweeps), for the
  // service's log and /metrics (sync/run-report.ts): one replica logs it. A job no service takes up
  // within a day is dropped: the run's row says the same.
  runReport: {
    name: 'run-report',
    policy: 'standard',
    retryLimit: 3,
    retryDelay: 5,
    expireInSeconds: 60,
    retentionSeconds: 86_400,
  },
} as const satisfies Record<string, Queue>

/**
 * The least time over which a queue retries a job that fails at once every time (a process dying at
 * its start, a database that stays away): its retry delays, doubled each time up to their maximum.
 * The tests hold each queue's settings to it.
 * @internal
 */
export function retryWindowSeconds(queue: Queue): number {
  let total = 0
  for (let retry = 0; retry < (queue.retryLimit ?? 0); retry++) {
    const delay = (queue.retryDelay ?? 0) * (queue.retryBackoff ? 2 ** retry : 1)
    total += queue.retryDelayMax ? Math.min(queue.retryDelayMax, delay) : delay
  }
  return total
}

/** Workers beat every 2 s, so a dead process's heartbeat is stale 8 to 10 s after its death. */
export const HEARTBEAT_REFRESH_SECONDS = 2

/**
 * How a process works the sweep queue: each sweep job is in the group of its upstream service (see
 * `sweepEnqueuer`), and `perService` sweeps of each service run at once. Sweeps are bound by their
 * service's request budget, not by this process; slots shared across services let a service's sweeps
 * waiting for its budget hold every slot while the other service's budget sat idle.
 */
export function sweepWorkOptions(perService: number) {
  return {
    localConcurrency: 2 * perService,
    localGroupConcurrency: perService,
    heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS,
    pollingIntervalSeconds: 1,
  }
}

export type JobQueue = PgBoss

/**
 * Starts the job queue of the process, with the queues of every account (null: the one account of a
 * deployment without ACCOUNTS_FILE, whose queues have the plain names; see account-queue.ts).
 */
export async function startJobQueue(
  connectionString: string,
  logger: Logger,
  accounts: readonly (string | null)[] = [null],
  options: { pruneSchedules?: boolean } = {},
): Promise<JobQueue> {
  // LISTEN/NOTIFY wakes workers the moment a delivery or refresh is queued (polling stays the floor).
  // Its pool of 5 and its LISTEN connection, with the main pool's 10: 16 connections a process,
  // whatever the number of accounts (docs/accounts.md).
  const boss = new PgBoss({
    connectionString,
    schema: JOB_SCHEMA,
    max: 5,
    application_name: 'crm-sync:jobs',
    useListenNotify: true,
    // A sweep or refresh whose process died is noticed by its missed heartbeats (10 s, the least
    // pg-boss allows). pg-boss looks for them in its monitor pass, so that pass runs every 4 s (not
    // pg-boss's 60 s): a replica or a restart takes the work up again within about 16 s.
    superviseIntervalSeconds: 2,
    monitorIntervalSeconds: 4,
  })
  boss.on('error', (error) => logger.error({ err: error }, 'job queue error'))
  await boss.start()
  // Policies are set at every start, so that a new version's take effect on queues an older one made
  // (only a queue's policy cannot change).
  for (const account of accounts) {
    const queues = accountQueue(boss, account)
    for (const queue of Object.values(QUEUES)) {
      const { name, ...options } = queue
      if (!(await queues.getQueue(name))) await queues.createQueue(name, options)
      else {
        const { policy: _, ...changeable } = options as typeof options & { policy?: unknown }
        await queues.updateQueue(name, changeable)
      }
    }
  }
  // An account no longer in ACCOUNTS_FILE: its schedules end (its queues and schemas are left alone).
  // Only `crm-sync start`, which knows every account, asks this: a command knows the one it works on.
  const kept = new Set(accounts.filter((account) => account !== null))
  for (const { name } of options.pruneSchedules ? await boss.getSchedules() : []) {
    const [account] = name.split('/')
    if (name.includes('/') && !kept.has(account as string)) await boss.unschedule(name)
  }
  return boss
}

/** Lets pg-boss write inside a Kysely transaction, so a job commits or rolls back with our rows. */
export function jobConnection(db: Kysely<unknown>) {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const result = await db.executeQuery(CompiledQuery.raw(text, values))
      return { rows: result.rows as Record<string, unknown>[] }
    },
  }
}

/**
 * Queues a refresh of one record inside `trx`. At most one refresh per record runs in each slot of
 * `coalesceSeconds`: the first change of a quiet record is fetched at once, later changes in the same
 * slot share one refresh at the start of the next slot, and a refresh already queued absorbs the rest.
 * Every change is still followed by a fetch that starts after it.
 */
export async function enqueueRefresh(
  boss: JobQueue,
  trx: Kysely<Database>,
  job: RefreshJob,
  coalesceSeconds: number,
): Promise<boolean> {
  const id = await boss.send(QUEUES.refresh.name, job, {
    singletonKey: `${job.resource}:${job.id}`,
    singletonSeconds: coalesceSeconds,
    singletonNextSlot: true,
    db: jobConnection(trx as Kysely<unknown>),
  })
  return id !== null
}

/** Sends the job of a replay of deliveries inside `trx`, the transaction that creates its row. */
export async function sendDeliveryReplay(boss: JobQueue, trx: Kysely<Database>, replayId: number) {
  await boss.send(QUEUES.deliveryReplay.name, { replayId }, { db: jobConnection(trx as Kysely<unknown>) })
}

/** Queues a check of each record (`show`, then written or tombstoned) inside the caller's transaction. */
export type QueueRecordChecks = (
  trx: Kysely<Database>,
  resource: string,
  ids: readonly number[],
) => Promise<void>

/**
 * Record checks as refresh jobs: one per record, however many ask for it (see `enqueueRefresh`). A check
 * is asked now: a fetch of the record sent later (a sweep's page, its reconciliation) answers it.
 */
export function recordChecks(
  boss: JobQueue,
  coalesceSeconds: number,
  mirrored?: ReadonlySet<string>,
): QueueRecordChecks {
  return async (trx, resource, ids) => {
    // A resource MIRROR_RESOURCES leaves out is not synced: its rows stay as last synced.
    if (mirrored && !mirrored.has(resource)) return
    const askedAt = new Date().toISOString()
    for (const id of ids)
      await enqueueRefresh(boss, trx, { resource, id, askedAt, cascade: true }, coalesceSeconds)
  }
}

/**
 * Queues a refresh again, to run in about `seconds` (at most one such job per record in each slot of
 * that length): a check put off while a full sweep of its resource runs.
 */
export async function deferRefresh(boss: JobQueue, job: RefreshJob, seconds: number): Promise<void> {
  await boss.send(QUEUES.refresh.name, job, {
    singletonKey: `${job.resource}:${job.id}:deferred`,
    singletonSeconds: seconds,
    singletonNextSlot: true,
    startAfter: seconds,
  })
}

export interface RefreshJob {
  resource: string
  id: number
  /**
   * When the delivery that asked for the refresh arrived (ISO), for the freshness metric. A refresh
   * that absorbs later deliveries keeps the first one's: the longest wait. Absent from older jobs.
   */
  receivedAt?: string
  /**
   * When the activity feed's page naming the change was fetched, or when a check of the record was
   * asked (ISO): a row fetched before then does not answer the refresh, whatever the deliveries say.
   */
  askedAt?: string
  /**
   * A check of a record whose parent was found gone (an upstream cascade deletes it silently): put off
   * while a full sweep of its resource runs, which reconciles it anyway.
   */
  cascade?: boolean
}
