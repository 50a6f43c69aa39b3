// This process's side of the request budget that all replicas share in PostgreSQL (src/store/budget.ts):
// wait for a slot before each request, give it back when the answer is in, pause everybody on a 429.
// For an upstream whose limit is not published, the configured size is the most the budget allows: a
// 429 that comes while the budget is nearly all in use means the real limit is lower, and the budget
// narrows to 80%, no lower, then widens by one slot for every 30 s without a 429. Random 429s (a fault,
// not a limit: indistinguishable from one while the budget is in full use) thus cost at most a fifth of
// the budget; a real limit below 80% is met by the pauses of its 429s, and is for the operator to set.
import type { Logger } from '../log.ts'
import {
  type BudgetLease,
  narrowBudget,
  pauseBudget,
  prepareBudget,
  releaseBudgetSlot,
  takeBudgetSlot,
  widenBudget,
} from '../store/budget.ts'
import type { Db } from '../store/database.ts'
import { type Clock, sleepUntil } from './clock.ts'
import { RequestAborted } from './errors.ts'
import type { UpstreamMetrics } from './metrics.ts'

export interface BudgetOptions {
  db: Db
  /** Budget key shared by the replicas: the upstream's name, never its API key. */
  key: string
  /** The service, for the counters. */
  service: string
  /** Requests allowed per window. */
  requests: number
  /** The least the budget narrows to after 429s at its limit (`requests`: it never narrows). */
  floor: number
  windowMs: number
  /** Longest a request can take (its timeout): a slot whose holder died is free again after it. */
  requestTimeoutMs: number
  clock: Clock
  metrics: UpstreamMetrics
  logger: Logger
}

export interface Budget {
  /**
   * Waits until the shared budget allows one more request; throws RequestAborted once `signal` is
   * aborted while it waits.
   */
  take(signal?: AbortSignal): Promise<BudgetLease>
  /** The request's answer (or failure) is in: its slot counts from now until one window later. */
  release(lease: BudgetLease): Promise<void>
  /** A 429: the budget narrows if it was nearly all in use, and nobody sends for `ms` (its Retry-After). */
  rateLimited(ms: number): Promise<void>
}

// A waiter looks again at least this often: another replica may release a slot early or pause the budget.
const RECHECK_MS = 1_000
// Added to the hold of a taken slot, for the time between the answer and its release.
const RELEASE_MARGIN_MS = 5_000
/** A narrowed budget widens by one slot after this long without a 429 (looked at this often). */
export const BUDGET_WIDEN_AFTER_MS = 30_000
/** The least a budget of an unpublished limit narrows to, as a share of its configured size. */
export const BUDGET_FLOOR_SHARE = 0.8

export function createBudget(options: BudgetOptions): Budget {
  const { db, key, clock, metrics } = options
  const at = () => (clock.drivesBudget ? new Date(clock.now()) : null)
  let prepared: Promise<void> | undefined
  let widenedAt = clock.now()

  async function widen(): Promise<void> {
    if (options.floor >= options.requests || clock.now() - widenedAt < BUDGET_WIDEN_AFTER_MS) return
    widenedAt = clock.now()
    const size = await widenBudget(db, key, {
      size: options.requests,
      quietMs: BUDGET_WIDEN_AFTER_MS,
      at: at(),
    })
    if (size !== null)
      options.logger.info({ upstream: options.service, requests: size }, 'request budget widened')
  }

  return {
    async take(signal) {
      prepared ??= prepareBudget(db, key, options.requests).catch((error) => {
        prepared = undefined
        throw error
      })
      await prepared
      await widen()
      const started = clock.now()
      for (let waited = false; ; waited = true) {
        if (signal?.aborted) throw new RequestAborted(`${options.service}: stopped waiting for the budget`)
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
        await sleepUntil(clock, now + Math.min(Math.max(taken.waitMs, 0), RECHECK_MS), signal)
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

    async rateLimited(ms) {
      const size =
        options.floor < options.requests
          ? await narrowBudget(db, key, { floor: options.floor, at: at() })
          : null
      await pauseBudget(db, key, { ms, at: at() })
      if (size === null) return
      widenedAt = clock.now()
      metrics.budgetNarrowed.add({ upstream: options.service })
      options.logger.warn(
        { upstream: options.service, requests: size, windowMs: options.windowMs },
        'rate limited while the budget was nearly all in use: narrowed it (it widens again without 429s)',
      )
    },
  }
}

/**
 * A budget that grants every request at once and shares nothing: for one request made outside the
 * engine's work (`crm-sync check` before the database holds the shared budget).
 */
export function unsharedBudget(): Budget {
  return {
    take: async () => ({ slot: 0, lease: 0, grantedAt: new Date() }),
    release: async () => {},
    rateLimited: async () => {},
  }
}
