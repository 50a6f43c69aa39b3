// What a refresh of one record does next: a pure decision (`nextRefreshStep`) over one read of the
// state (`readRefreshFacts`), taken again after each step until the refresh fetches its record or finds
// nothing to do. In order:
// - skip: a fetch sent after the record's latest delivery (and after the feed's page that asked for
//   it) wrote the row, or a full sweep that started since reads it: that answer holds every change the
//   deliveries told of. A burst that trickles in while a refresh waits for the budget costs one request.
// - defer: a check of a dependant whose parent went (a cascade) while a full sweep of its resource runs:
//   the sweep reconciles it, and a check now would cost a second `show`.
// - join: refreshes of the resource wait in numbers, so the newest page of its index answers them
//   together (refresh/catch-up.ts); twice, since the walk in flight may have sent its request before
//   this delivery arrived.
// - wait: the record had a delivery less than REFRESH_QUIET_MS ago; one fetch after the last delivery
//   of a burst answers them all. While deliveries arrive faster than the request budget could fetch
//   their records, the quiet needed is longer (2 s): the budget goes to records that stopped changing.
//   30 s at most, quiet or not.
// - fetch: `show` the record.
import type { Config } from '../../config/index.ts'
import type { AnyResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { countRecentDeliveries, latestDelivery } from '../../store/inbox.ts'
import { readFetchedAt } from '../../store/record-times.ts'
import { fullSweepRunning, fullSweepRunningSince } from '../../store/runs.ts'

export interface QuietOptions {
  /** No delivery of the record for this long: quiet. 0 turns the wait off. */
  quietMs: number
  /** The wait ends after this long, quiet or not. */
  maxWaitMs: number
  /**
   * When at least `deliveries` deliveries arrived in the last `windowMs` (more than the request
   * budget serves in its window), the record must be quiet for `quietMs` of this instead.
   */
  pressure: { windowMs: number; deliveries: number; quietMs: number }
}

/** The quiet a refresh waits for: REFRESH_QUIET_MS, 2 s under pressure, 30 s at most. */
export function quietOptions(config: Config): QuietOptions {
  const { requests, windowSeconds } = config.upstream.crm
  return {
    quietMs: config.refreshQuietMs,
    maxWaitMs: 30_000,
    pressure: {
      windowMs: windowSeconds * 1000,
      deliveries: requests,
      quietMs: Math.max(config.refreshQuietMs, 2_000),
    },
  }
}

export interface RefreshFacts {
  /** A fetch since the change wrote the row, or a full sweep started since reads it. */
  answered: boolean
  /** A cascade check while a full sweep of its resource runs. */
  cascadeInFullSweep: boolean
  /** Refreshes of the resource wait in such numbers that a page of its index is cheaper. */
  crowded: boolean
  /** Milliseconds since the record's latest delivery; null without one. */
  deliveryAgeMs: number | null
  /** Deliveries arrive faster than the request budget could fetch their records. */
  pressure: boolean
  /** Steps taken so far, rounds of a catch-up walk joined, and milliseconds since the first step. */
  steps: number
  joined: number
  waitedMs: number
}

export type RefreshStep =
  | { do: 'skip' }
  | { do: 'defer' }
  | { do: 'join' }
  | { do: 'wait'; ms: number }
  | { do: 'fetch' }

/** The next step of a refresh (see the top of this file). */
export function nextRefreshStep(facts: RefreshFacts, quiet: QuietOptions | undefined): RefreshStep {
  if (facts.answered) return { do: 'skip' }
  if (facts.cascadeInFullSweep) return { do: 'defer' }
  if (facts.joined === 1 || (facts.steps === 0 && facts.crowded)) return { do: 'join' }
  if (facts.joined > 0 || !quiet || quiet.quietMs <= 0 || facts.deliveryAgeMs === null) return { do: 'fetch' }
  const needed = facts.pressure ? Math.max(quiet.quietMs, quiet.pressure.quietMs) : quiet.quietMs
  const left = quiet.maxWaitMs - facts.waitedMs
  if (left <= 0 || facts.deliveryAgeMs >= needed) return { do: 'fetch' }
  return { do: 'wait', ms: Math.min(needed - facts.deliveryAgeMs, left) }
}

export interface RefreshTarget {
  resource: AnyResource
  id: number
  /** A change known to be upstream by then (the activity feed read it). */
  askedAt?: Date
  cascade: boolean
}

export interface RefreshFactSources {
  db: Db
  /** Whether refreshes of the resource wait in numbers (catch-up.ts); absent: never. */
  crowded?: (resource: AnyResource) => Promise<boolean>
  /** Whether a cascade check may be put off; absent: never. */
  defers: boolean
  quiet?: QuietOptions
}

/**
 * The one read a step is decided from: the record's latest delivery once (for both whether a fetch
 * answered it and how quiet it is), and only what the step can use besides: the backlog before the
 * first step, the full sweep for a cascade check, the pressure once the record is quiet enough
 * without it.
 */
export async function readRefreshFacts(
  sources: RefreshFactSources,
  target: RefreshTarget,
  progress: { steps: number; joined: number; waitedMs: number },
): Promise<RefreshFacts> {
  const { db, quiet } = sources
  const { resource, id } = target
  const model = resource.webhookModel
  const first = progress.steps === 0
  const delivered = model ? await latestDelivery(db, model, id) : null
  const [answered, cascadeInFullSweep, crowded] = await Promise.all([
    answeredAlready(db, resource, id, delivered?.at ?? null, target.askedAt),
    target.cascade && sources.defers ? fullSweepRunning(db, resource.name) : false,
    first && sources.crowded ? sources.crowded(resource) : false,
  ])
  const deliveryAgeMs = quiet && progress.joined === 0 ? (delivered?.ageMs ?? null) : null
  const pressure =
    quiet !== undefined &&
    deliveryAgeMs !== null &&
    deliveryAgeMs >= quiet.quietMs &&
    (await countRecentDeliveries(db, quiet.pressure.windowMs)) >= quiet.pressure.deliveries
  return { answered, cascadeInFullSweep, crowded, deliveryAgeMs, pressure, ...progress }
}

/**
 * Whether a fetch sent after the record's latest delivery arrived (both on PostgreSQL's clock), and
 * after `askedAt` when given (the activity feed's page), wrote the row; or a full sweep that started
 * after the change reads it (a refresh would spend the budget that sweep needs; should it fail, the
 * next incremental one reads the change, its watermark being older than the change).
 */
async function answeredAlready(
  db: Db,
  resource: AnyResource,
  id: number,
  delivered: Date | null,
  askedAt?: Date,
): Promise<boolean> {
  const asked = Math.max(delivered?.getTime() ?? 0, askedAt?.getTime() ?? 0)
  if (asked === 0) return false
  const fetched = await readFetchedAt(db, resource, id)
  if (fetched !== null && fetched.getTime() >= asked) return true
  return fullSweepRunningSince(db, resource.name, new Date(asked))
}
