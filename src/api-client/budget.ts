// This process's side of the request budget that all replicas share in PostgreSQL (src/store/budget.ts):
// wait for a slot before each request, give it back when the answer is in, pause everybody on a 429.
import type { Logger } from '../log.ts'
import {
  type BudgetLease,
  pauseBudget,
  prepareBudget,
  releaseBudgetSlot,
  takeBudgetSlot,
} from '../store/budget.ts'
import type { Db } from '../store/database.ts'
import type { Clock } from './clock.ts'
import type { UpstreamMetrics } from './metrics.ts'

export interface BudgetOptions {
  db: Db
  /** Budget key shared by the replicas: the upstream's name, never its API key. */
  key: string
  /** The service, for the counters. */
  service: string
  /** Requests allowed per window. */
  requests: number
  windowMs: number
  /** Longest a request can take (its timeout): a slot whose holder died is free again after it. */
  requestTimeoutMs: number
  clock: Clock
  metrics: UpstreamMetrics
  logger: Logger
}

export interface Budget {
  /** Waits until the shared budget allows one more request. */
  take(): Promise<BudgetLease>
  /** The request's answer (or failure) is in: its slot counts from now until one window later. */
  release(lease: BudgetLease): Promise<void>
  /** Nobody sends to this upstream for `ms` (a 429's Retry-After). */
  pause(ms: number): Promise<void>
}

// A waiter looks again at least this often: another replica may release a slot early or pause the budget.
const RECHECK_MS = 1_000
// Added to the hold of a taken slot, for the time between the answer and its release.
const RELEASE_MARGIN_MS = 5_000

export function createBudget(options: BudgetOptions): Budget {
  const { db, key, clock, metrics } = options
  const at = () => (clock.drivesBudget ? new Date(clock.now()) : null)
  let prepared: Promise<void> | undefined

  return {
    async take() {
      prepared ??= prepareBudget(db, key, options.requests).catch((error) => {
        prepared = undefined
        throw error
      })
      await prepared
      const started = clock.now()
      for (let waited = false; ; waited = true) {
        const now = clock.now()
        const taken = await takeBudgetSlot(db, key, {
          holdMs: options.windowMs + options.requestTimeoutMs + RELEASE_MARGIN_MS,
          at: at(),
        })
        if (taken.granted) {
          if (waited)
            metrics.throttledSeconds.add({ upstream: options.service }, (clock.now() - started) / 1000)
          return { slot: taken.slot, lease: taken.lease, grantedAt: taken.grantedAt }
        }
        await clock.sleepUntil(now + Math.min(Math.max(taken.waitMs, 0), RECHECK_MS))
      }
    },

    async release(lease) {
      try {
        await releaseBudgetSlot(db, key, lease, { windowMs: options.windowMs, at: at() })
      } catch (error) {
        // The slot frees itself when its hold ends; the answer the caller has is still good.
        options.logger.warn(
          { err: error, upstream: options.service },
          'could not release a slot of the upstream budget',
        )
      }
    },

    async pause(ms) {
      await pauseBudget(db, key, { ms, at: at() })
    },
  }
}
