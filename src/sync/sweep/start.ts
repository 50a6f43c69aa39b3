// Where an incremental sweep starts, and whether it verifies what its newest pages cannot show (a count,
// or a complete walk: verification.ts schedules them by cost), with the activity feed's part
// (feed-coverage.ts). A full sweep always starts at the first page of the whole index.
import { type AnyResource, hasUpdatedAt } from '../../resources/index.ts'
import { deliveredSince } from '../../store/inbox.ts'
import type { ClaimedSweep } from '../../store/runs.ts'
import { countLiveRows, readResourceState } from '../../store/sync-state.ts'
import type { Checkpoint, SweepContext } from './context.ts'
import { answeredByFeed } from './feed-coverage.ts'
import { serviceVerificationCost, verificationDue } from './verification.ts'
import type { WalkResult } from './walk.ts'

/**
 * Whether the resource's deletions show only in a complete walk (it has no count route, or no updated_at).
 * An append-only log has none to show.
 */
export const verifiedByWalk = (resource: AnyResource) =>
  !resource.appendOnly && !(resource.routes.count && hasUpdatedAt(resource))

/** What verifying every resource of this one's upstream costs, from their live rows. */
function serviceCost(ctx: SweepContext): Promise<number> {
  return serviceVerificationCost(
    ctx.resource.service,
    (resource) => countLiveRows(ctx.db, resource),
    ctx.settings.verification,
  )
}

async function verificationIsDue(ctx: SweepContext, last: Date | null): Promise<boolean> {
  return verificationDue(ctx.resource, last, await serviceCost(ctx), ctx.settings.verification, new Date())
}

/**
 * Where the sweep starts: a full one, or an incremental one whose complete walk is due (verification.ts),
 * at the first page of the whole index; any other incremental one at the first page down to the
 * watermark. Null: nothing to do this cycle (a resource without updated_at whose walk is not due, or
 * one the activity feed answers for while no verification is due).
 */
export async function firstCheckpoint(ctx: SweepContext, claimed: ClaimedSweep): Promise<Checkpoint | null> {
  const everything = { phase: 'walk' as const, nextPage: 1, watermark: null }
  if (claimed.mode === 'full') return everything
  const state = await readResourceState(ctx.db, ctx.resource.name)
  const walked = verifiedByWalk(ctx.resource)
  if (walked) {
    if (await verificationIsDue(ctx, lastVerified(state))) return everything
    if (!hasUpdatedAt(ctx.resource)) return null
  }
  const counted = latest(state?.last_remote_count_at ?? null, lastVerified(state))
  const countDue = !walked && (await verificationIsDue(ctx, counted))
  if (!countDue && (await answeredByFeed(ctx, state?.watermark))) return null
  return { phase: 'walk', nextPage: 1, watermark: state?.watermark?.toISOString() ?? null }
}

/**
 * Whether an incremental walk that stopped at its watermark takes the count: when the resource changed
 * since the last count (newer records, deliveries), when the sweep resumed (what its first attempt saw
 * is not known), or when a verification is due.
 */
export async function countIsDue(
  ctx: SweepContext,
  claimed: ClaimedSweep,
  walked: WalkResult,
): Promise<boolean> {
  if (walked.newer > 0 || claimed.checkpoint !== null) return true
  const state = await readResourceState(ctx.db, ctx.resource.name)
  // The last count no longer matches the live rows (a walk after it tombstoned some): count again.
  const live = await countLiveRows(ctx.db, ctx.resource)
  if (state?.last_remote_count !== live) return true
  const counted = state?.last_remote_count_at ?? null
  const model = ctx.resource.webhookModel
  // Deliveries since the last walk began: the walk may have read their pages before they changed.
  const since = latest(counted, state?.last_full_sync_at ?? null)
  if (since && model && (await deliveredSince(ctx.db, model, since))) return true
  const last = latest(counted, lastVerified(state))
  return verificationDue(ctx.resource, last, await serviceCost(ctx), ctx.settings.verification, new Date())
}

const latest = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b))

/** When the last complete walk ended (its start, for state written before that was recorded). */
const lastVerified = (
  state: { last_verified_at: Date | null; last_full_sync_at: Date | null } | undefined,
): Date | null => state?.last_verified_at ?? state?.last_full_sync_at ?? null
