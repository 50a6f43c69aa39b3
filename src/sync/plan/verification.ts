// Verification: how an incremental sweep learns of deletions that its newest pages cannot show. Where
// the upstream has a count route, the count (one request): when it differs from the live rows, the walk
// goes on to every page and reconciles. Where it has none (tasks, reservation contacts and bookings;
// users, which have no `updated_at` either), a complete walk of the index and a reconciliation of the
// rows it did not see.
//
// Verification is all an idle cycle spends beyond its first page, and a complete walk costs a page per
// 250 records: it is scheduled by its cost against the budget, not run every cycle. A resource is
// verified at most every other interval, and no more often than lets the verifications of all the
// resources of its upstream use half of that upstream's budget (src/config/fixed.ts): every resource of
// an upstream has the period that the cost of verifying them all takes at that share, counted from the
// end of the last complete walk (a long one is not followed by another at once). A count is also taken
// whenever the resource changed since the last one (the walk saw newer records, or deliveries came):
// a delivery dropped among others is found at once, an idle account costs 1.5 requests a cycle.
// Deletions that cascade from a tombstoned parent do not wait for any of this (sync/refresh/dependant-checks.ts).
// An append-only log (activities) is never walked whole to verify it: it has no deletions to find; it
// costs what a counted resource does, the one page an incremental walk reads.
import { type AnyResource, hasUpdatedAt, resources } from '../../resources/index.ts'

export interface VerificationSettings {
  intervalSeconds: number
  /** Fraction of an upstream's budget that verifications may use on average. */
  budgetShare: number
  upstreams: Record<AnyResource['service'], { requestsPerSecond: number; pageSize: number }>
  /** The resources mirrored (MIRROR_RESOURCES); every one if not given. */
  mirrored?: readonly string[]
}

/** What verifying the resource costs in requests: its count, or a complete walk (with its last page). */
export function verificationCost(
  resource: AnyResource,
  liveRows: number,
  settings: VerificationSettings,
): number {
  if (resource.appendOnly || (resource.routes.count && hasUpdatedAt(resource))) return 1
  return Math.ceil(liveRows / settings.upstreams[resource.service].pageSize) + 1
}

/**
 * What verifying every resource of the service costs, from each resource's live rows (asked only of
 * the resources verified by a walk: a count costs one request whatever the size).
 */
export async function serviceVerificationCost(
  service: AnyResource['service'],
  liveRows: (resource: AnyResource) => Promise<number>,
  settings: VerificationSettings,
): Promise<number> {
  let cost = 0
  const mirrored = (resource: AnyResource) => settings.mirrored?.includes(resource.name) ?? true
  for (const resource of resources.filter((other) => other.service === service && mirrored(other))) {
    const walked = !resource.appendOnly && !(resource.routes.count && hasUpdatedAt(resource))
    cost += walked ? verificationCost(resource, await liveRows(resource), settings) : 1
  }
  return cost
}

/**
 * Seconds between two verifications of a resource of the service: what verifying all of them costs
 * (`serviceCost`), spread so that they use `budgetShare` of the service's budget; a list of ten
 * records then never makes a walk of 40,000 wait longer than its own cost does.
 */
export function verificationPeriodSeconds(
  service: AnyResource['service'],
  serviceCost: number,
  settings: VerificationSettings,
): number {
  const upstream = settings.upstreams[service]
  return Math.max(
    2 * settings.intervalSeconds,
    serviceCost / (settings.budgetShare * upstream.requestsPerSecond),
  )
}

/**
 * Whether a verification is due at `now`: never done, or done at `last` more than a period ago. A
 * little slack (a tenth of the interval) keeps a sweep that starts a moment early from waiting a cycle.
 */
export function verificationDue(
  resource: AnyResource,
  last: Date | null,
  serviceCost: number,
  settings: VerificationSettings,
  now: Date,
): boolean {
  if (!last) return true
  const slack = settings.intervalSeconds * 100
  const period = verificationPeriodSeconds(resource.service, serviceCost, settings) * 1000
  return now.getTime() - last.getTime() + slack >= period
}
