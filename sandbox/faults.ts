// Fault and behaviour settings, changeable while the sandbox runs (in-process or over the control
// API), and the counters of everything it served and delivered.
import { z } from 'zod'

const fraction = z.number().min(0).max(1)
const milliseconds = z.number().int().min(0)

const apiFaults = z.object({
  /** Fraction of API calls answered 500 (before the call takes effect). */
  errorRate: fraction,
  /** Fraction of API calls answered 429 on top of the real rate limit. */
  throttleRate: fraction,
  /** Latency added to every API call; with `latencyMaxMs`, the least of a range. */
  latencyMs: milliseconds,
  /**
   * When set (at least `latencyMs`), every API call waits a time drawn uniformly from
   * [latencyMs, latencyMaxMs] instead (seeded, like the other fault decisions). Null: exactly `latencyMs`.
   */
  latencyMaxMs: milliseconds.nullable(),
})

/** A range's upper end below its lower end is refused, whichever of the two a patch moved. */
const latencyRange = z
  .object({ latencyMs: milliseconds, latencyMaxMs: milliseconds.nullable() })
  .refine((range) => range.latencyMaxMs === null || range.latencyMaxMs >= range.latencyMs, {
    message: 'must be at least latencyMs',
    path: ['latencyMaxMs'],
  })
const latencyRanges = z.object({ crm: latencyRange, reservation: latencyRange })

const deliveryFaults = z.object({
  dropRate: fraction,
  duplicateRate: fraction,
  /** Fraction of deliveries held back by up to `delayMs`, so later ones overtake them. */
  delayRate: fraction,
  delayMs: milliseconds,
  /** Every delivery fails without being sent, until switched off: the receiver is "down". */
  receiverDown: z.boolean(),
})

export const faultsSchema = z.object({ crm: apiFaults, reservation: apiFaults, deliveries: deliveryFaults })
export type Faults = z.infer<typeof faultsSchema>

export const faultsPatchSchema = z.strictObject({
  crm: apiFaults.partial().strict().optional(),
  reservation: apiFaults.partial().strict().optional(),
  deliveries: deliveryFaults.partial().strict().optional(),
})
export type FaultsPatch = z.infer<typeof faultsPatchSchema>

export function noFaults(): Faults {
  const api = { errorRate: 0, throttleRate: 0, latencyMs: 0, latencyMaxMs: null }
  return {
    crm: { ...api },
    reservation: { ...api },
    deliveries: { dropRate: 0, duplicateRate: 0, delayRate: 0, delayMs: 1000, receiverDown: false },
  }
}

/** Applies `patch`, or changes nothing and throws a ZodError when a latency range would end below its start. */
export function patchFaults(faults: Faults, patch: FaultsPatch): void {
  latencyRanges.parse({
    crm: { ...faults.crm, ...patch.crm },
    reservation: { ...faults.reservation, ...patch.reservation },
  })
  Object.assign(faults.crm, patch.crm)
  Object.assign(faults.reservation, patch.reservation)
  Object.assign(faults.deliveries, patch.deliveries)
}

const rateLimit = z.object({ requests: z.number().int().min(1), windowSeconds: z.number().positive() })

export const behaviourSchema = z.strictObject({
  /** Per API key; null switches the limit off. */
  crmRateLimit: rateLimit.nullable(),
  reservationRateLimit: rateLimit.nullable(),
  /**
   * Largest page served, whatever `perpage` asked for. The spec says 500, the public docs and every
   * public client 250: the default is 250, and 500 is a kinder variant a test names.
   */
  maxPerpage: z.number().int().min(1),
  /**
   * Whether a tag or address change bumps its parent's `updated_at` and sends the parent's update.
   * Not published: the default is false (such a change shows only to a full sweep, the safety net);
   * true is a kinder variant a test names.
   */
  childChangesTouchParent: z.boolean(),
  /**
   * Whether `change_status` of a deal or project bumps its `updated_at`, sends its update and logs the
   * activity. Not shown: the default is false (the state and `finished_at` change silently, so only a
   * full run's walk shows it); true is a kinder variant a test names.
   */
  statusChangesTouchRecord: z.boolean(),
  /**
   * Whether a change to a person's historic events or assistants (person-details.ts) bumps the
   * person's `updated_at`, sends its update and logs the activity. Not shown: the default is false
   * (no index, show or webhook tells of it); true is a kinder variant a test names.
   */
  detailChangesTouchPerson: z.boolean(),
  /**
   * Largest page of a person's historic events and assistants (`people/{id}/historic_events`,
   * `/assis`), whatever `perpage` asks. Their paging is not shown: the default is 10; a larger one, up
   * to the indexes' 500, is a kinder variant a test names.
   */
  nestedPageSize: z.number().int().min(1).max(500),
  /** `remove`: a deleted contact is gone; `soft`: it stays listed with `deleted_at` set. */
  contactDeletion: z.enum(['remove', 'soft']),
  /**
   * Whether the activity log's index applies `filter[...]` (`filter[created_at][larger_than]`). Not
   * shown: the default ignores them (every page of the whole log, newest first); `honoured` is a
   * kinder variant a test names.
   */
  activityFilters: z.enum(['ignored', 'honoured']),
  /**
   * How an index orders records that tie on its sort key (the same second, the same name). Not shown,
   * and nothing promises a tie-breaker: the default `shuffled` gives them a new random order on every
   * request, as `ORDER BY updated_at LIMIT … OFFSET …` may without one, so a tie group that straddles
   * a page boundary can hide a record from both pages; `by-id` is a kinder variant a test names.
   */
  tieOrder: z.enum(['shuffled', 'by-id']),
  /** People the account can hold; creating more answers 507. Null: unlimited. */
  maxPeople: z.number().int().min(0).nullable(),
  deliveryTimeoutMs: z.number().int().positive(),
})
export type Behaviour = z.infer<typeof behaviourSchema>
/** The settings that say whether a sub-object's change touches the record that holds it. */
export type TouchSetting = 'childChangesTouchParent' | 'detailChangesTouchPerson'
export const behaviourPatchSchema = behaviourSchema.partial()
export type BehaviourPatch = z.infer<typeof behaviourPatchSchema>

/** The least helpful behaviour the upstream facts allow; kinder variants are options a test names. */
export function defaultBehaviour(): Behaviour {
  return {
    crmRateLimit: { requests: 50, windowSeconds: 10 },
    reservationRateLimit: { requests: 50, windowSeconds: 10 },
    maxPerpage: 250,
    childChangesTouchParent: false,
    statusChangesTouchRecord: false,
    detailChangesTouchPerson: false,
    nestedPageSize: 10,
    contactDeletion: 'remove',
    activityFilters: 'ignored',
    tieOrder: 'shuffled',
    maxPeople: null,
    deliveryTimeoutMs: 10_000,
  }
}

export interface ServiceCounters {
  requests: number
  /** Status code → responses. */
  statuses: Record<string, number>
  /** `GET /api/people/:id` → requests. */
  routes: Record<string, number>
  rateLimited: number
  injectedErrors: number
  injectedThrottles: number
  /**
   * Time its 429s asked a well-behaved client to send nothing: the union of their Retry-After
   * periods (overlapping ones count once), in milliseconds.
   */
  retryAfterMs: number
  /**
   * The same for the injected 429s alone (`throttleRate`): the quiet asked for whatever the client
   * does, while a client that keeps within the rate limit never meets the others.
   */
  injectedRetryAfterMs: number
}

export interface DeliveryCounters {
  /** Deliveries created: one per matching hook and change. */
  queued: number
  succeeded: number
  failed: number
  dropped: number
  duplicated: number
  delayed: number
}

export interface Counters {
  crm: ServiceCounters
  reservation: ServiceCounters
  deliveries: DeliveryCounters
  /** `person.update` → changes made, through the API or the control API. */
  changes: Record<string, number>
}

function serviceCounters(): ServiceCounters {
  return {
    requests: 0,
    statuses: {},
    routes: {},
    rateLimited: 0,
    injectedErrors: 0,
    injectedThrottles: 0,
    retryAfterMs: 0,
    injectedRetryAfterMs: 0,
  }
}

export function zeroCounters(): Counters {
  return {
    crm: serviceCounters(),
    reservation: serviceCounters(),
    deliveries: { queued: 0, succeeded: 0, failed: 0, dropped: 0, duplicated: 0, delayed: 0 },
    changes: {},
  }
}

export function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}
