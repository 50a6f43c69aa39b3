// The workers of the inbox: they take accepted deliveries oldest first, a batch per transaction, and
// apply them (apply.ts). The receiver of this process wakes them the moment it commits a delivery;
// deliveries another replica received, or whose retry falls due, are found by polling.
import { withLogContext } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import { claimDeliveries, type InboxRow, recordDeliveryFailure } from '../../store/inbox.ts'
import type { SyncObserver } from '../observer.ts'
import { type AppliedDelivery, applyDeliveries, type DeliveryDeps } from './apply.ts'
import { createClaimFloor } from './claim-floor.ts'

/** The kind under which deliveries are counted in `crm_sync_jobs_total`, as when they were pg-boss jobs. */
export const DELIVERY_KIND = 'webhook-delivery'

export interface DeliveryWorkerDeps extends DeliveryDeps {
  db: Db
  observer?: SyncObserver
  onApplied?: (delivery: AppliedDelivery) => void
}

export interface DeliveryWorkerOptions {
  /** Deliveries applied in one transaction at most. */
  batchSize?: number
  /** Batches in flight at once in this process. */
  concurrency?: number
  /** How often an idle worker looks for deliveries nobody woke it for. */
  pollMs?: number
  /**
   * After a batch short of `batchSize`, how long from its start a worker waits before it takes the
   * next (ms), so that deliveries arriving meanwhile share one transaction.
   */
  gatherMs?: number
  /** Attempts before a delivery is kept as `failed`. */
  maxAttempts?: number
  /** How often a claim starts from the beginning of the inbox (claim-floor.ts). */
  fullClaimEveryMs?: number
}

export interface DeliveryWorker {
  /** A delivery was committed (its id, when the receiver of this process committed it): look now. */
  wake(id?: number): void
  /** Lets the batches in flight finish; takes no more. */
  stop(): Promise<void>
}

/**
 * 50 ms: at 1,000 deliveries a second a batch then carries about 25 of them, one transaction of six
 * statements where each delivery alone took one, and a delivery waits at most that long more to be
 * applied. A delivery that finds the workers idle is taken at once.
 */
export const DELIVERY_GATHER_MS = 50

/** 2 s, doubling, at most 5 min (as the pg-boss queue of deliveries retried). */
export const deliveryRetryInMs = (attempts: number) => Math.min(2_000 * 2 ** (attempts - 1), 300_000)

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

export interface InboxDrain {
  /** Applies one batch of due deliveries; returns how many were taken (0: none is due). */
  drainOnce(): Promise<number>
  /** The receiver of this process committed this delivery (claim-floor.ts). */
  committed(id?: number): void
  batchSize: number
}

/** The work of one worker, without its loop: tests drive it directly. */
export function createInboxDrain(
  deps: DeliveryWorkerDeps,
  options: Pick<DeliveryWorkerOptions, 'batchSize' | 'maxAttempts' | 'fullClaimEveryMs'> = {},
): InboxDrain {
  const { db, logger, observer } = deps
  const batchSize = options.batchSize ?? 200
  const maxAttempts = options.maxAttempts ?? 20
  const floor = createClaimFloor(options.fullClaimEveryMs)

  function report(rows: InboxRow[], applied: AppliedDelivery[]) {
    observer?.jobsDone?.(DELIVERY_KIND, 'completed', rows.length)
    for (const delivery of applied) deps.onApplied?.(delivery)
  }

  async function claimFromFloor(trx: Parameters<typeof claimDeliveries>[0]): Promise<InboxRow[]> {
    const window = floor.start(performance.now())
    let rows: InboxRow[] = []
    try {
      rows = await claimDeliveries(trx, batchSize, { after: window.after })
      return rows
    } finally {
      window.end(rows.at(-1)?.id, rows.length === batchSize)
    }
  }

  /**
   * Applies `ids` (else the next batch due) in one transaction; throws when anything fails (nothing
   * is then written). `claimed` receives the ids it took, for a retry of exactly those.
   */
  async function applyBatch(ids?: number[], claimed: number[] = []): Promise<InboxRow[]> {
    let rows: InboxRow[] = []
    const outcome = await db.transaction().execute(async (trx) => {
      rows = ids ? await claimDeliveries(trx, ids.length, { ids }) : await claimFromFloor(trx)
      claimed.push(...rows.map((row) => row.id))
      return rows.length ? applyDeliveries(trx, rows, deps) : null
    })
    if (outcome) {
      report(rows, outcome.applied)
      logger.debug({ deliveries: rows.length, refreshes: outcome.refreshes }, 'deliveries applied')
    }
    return rows
  }

  /** After a batch failed: each delivery alone, so that one bad delivery holds back no other. */
  async function applyOneByOne(rows: InboxRow[]) {
    for (const row of rows) {
      const context = { inboxId: row.id, model: row.model, recordId: row.record_id }
      await withLogContext(context, async () => {
        try {
          await applyBatch([row.id])
        } catch (error) {
          observer?.jobsDone?.(DELIVERY_KIND, 'failed', 1)
          const verdict = await recordDeliveryFailure(db, row.id, message(error), {
            maxAttempts,
            retryInMs: deliveryRetryInMs,
          })
          if (verdict === 'failed') {
            logger.error(
              { err: error },
              `a delivery failed ${maxAttempts} times; kept as failed in the inbox`,
            )
          } else {
            logger.warn({ err: error }, 'could not apply a delivery; it will be retried')
          }
        }
      })
    }
  }

  async function drainOnce(): Promise<number> {
    const claimed: number[] = []
    try {
      return (await applyBatch(undefined, claimed)).length
    } catch (error) {
      // Nothing was written. Read the batch again, without the failed transaction's lock (all that
      // are due when the claim itself failed).
      const ids = claimed.length ? claimed : undefined
      const rows = await db
        .transaction()
        .execute((trx) => claimDeliveries(trx, ids ? ids.length : batchSize, { ids }))
      if (rows.length === 0) throw error
      logger.warn(
        { err: error, deliveries: rows.length },
        'a batch of deliveries failed; applying them one by one',
      )
      await applyOneByOne(rows)
      return rows.length
    }
  }

  return { drainOnce, committed: floor.committed, batchSize }
}

export function startDeliveryWorker(
  deps: DeliveryWorkerDeps,
  options: DeliveryWorkerOptions = {},
): DeliveryWorker {
  const { logger } = deps
  const { drainOnce, committed, batchSize } = createInboxDrain(deps, options)
  const concurrency = options.concurrency ?? 2
  const pollMs = options.pollMs ?? 500
  const gatherMs = options.gatherMs ?? DELIVERY_GATHER_MS
  let stopped = false
  // Set by wake(): a delivery committed while a worker was busy is looked for before it sleeps.
  let woken = false
  // Workers asleep, and whether a wake() ends the sleep: it ends an idle one's (nothing was due when
  // it looked), not one's that gathers deliveries for its next batch or waits after an error.
  let sleepers: { idle: boolean; done: () => void }[] = []

  const sleep = (ms: number, idle: boolean) =>
    new Promise<void>((resolve) => {
      const sleeper = { idle, done }
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        sleepers = sleepers.filter((other) => other !== sleeper)
        resolve()
      }
      sleepers.push(sleeper)
    })

  async function loop() {
    while (!stopped) {
      try {
        woken = false
        const began = performance.now()
        const count = await drainOnce()
        if (count === 0) {
          if (!woken) await sleep(pollMs, true)
        } else if (count < batchSize) {
          await sleep(Math.min(gatherMs, Math.max(0, gatherMs - (performance.now() - began))), false)
        }
      } catch (error) {
        logger.error({ err: error }, 'could not read the inbox; trying again shortly')
        await sleep(Math.max(pollMs, 1_000), false)
      }
    }
  }

  const loops = Array.from({ length: concurrency }, () =>
    withLogContext({ queue: DELIVERY_KIND }, () => loop()),
  )

  return {
    wake(id) {
      committed(id)
      woken = true
      sleepers.find((sleeper) => sleeper.idle)?.done()
    },
    async stop() {
      stopped = true
      for (const sleeper of [...sleepers]) sleeper.done()
      await Promise.all(loops)
    },
  }
}
