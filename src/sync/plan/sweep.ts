// What a sweep reads, decided in one place: pure functions over one read of the state (`readSweepFacts`).
// A full sweep reads every page. An incremental one reads every page when its resource's verification
// is due and the resource is verified by a complete walk (verification.ts); otherwise its newest pages
// down to the watermark, unless the activity feed answers for them (its part below) or the
// resource has no `updated_at` to stop at. After a walk that stopped at its watermark, the count is
// taken when the resource changed since the last one, when the sweep resumed, or when a verification
// by count is due. A list whose live rows fit on the largest page it has shown is read whole by that
// first page, which then shows a deletion at once (`onePage`).
//
// The activity feed's part: the log names every create, update and destroy of the resources it covers,
// and the feed refreshes each record it names within a poll. While it answers (it polled within two
// polls and 10 s, and has read the log without a gap since the watermark), an incremental sweep of such
// a resource has nothing to read on its newest pages: it reads nothing unless a verification is due.
import type { AnyResource } from '../../resources/index.ts'
import { hasUpdatedAt } from '../../resources/index.ts'
import { readFeedCoverage } from '../../store/activity-feed.ts'
import { deliveredSince } from '../../store/inbox.ts'
import { countLiveRows, readResourceState } from '../../store/sync-state.ts'
import { FEED_COVERS, FEED_NAME } from '../feed/activity-feed.ts'
import type { SweepContext } from '../sweep/context.ts'
import { serviceVerificationCost, type VerificationSettings, verificationDue } from './verification.ts'

export interface SweepFacts {
  resource: AnyResource
  mode: 'full' | 'incremental'
  /** The sweep resumes from a checkpoint of an earlier attempt. */
  resumed: boolean
  state: {
    watermark: Date | null
    lastRemoteCount: number | null
    lastRemoteCountAt: Date | null
    /** When the last complete walk ended. */
    lastVerifiedAt: Date | null
    largestPage: number
  }
  /** Rows of the resource's table not tombstoned. */
  liveRows: number
  /** What verifying every resource of the service costs in requests (verification.ts). */
  serviceCost: number
  verification: VerificationSettings
  /** The activity feed: its period (0: off), how far it has read and since when it wrote the log. */
  feed: {
    pollSeconds: number
    coveredSince: Date | null
    polledAt: Date | null
    logWrittenSince?: Date | null
    newestId?: number | null
  }
  /** Deliveries about the resource since its last count or complete walk. */
  deliveredSinceCount: boolean
  now: Date
}

export type SweepPlan =
  /** Every page, then the reconciliation of what the walk did not see. */
  | { read: 'everything'; onePage: boolean }
  /**
   * The newest pages down to the watermark (null: none yet, every page). `feedReadTo`: the log's walk
   * may also stop at a page the mirror holds whole whose entries are all at or below this id, the
   * feed having written every entry up to it since the watermark.
   */
  | { read: 'newest'; watermark: Date | null; onePage: boolean; feedReadTo?: number }
  /** A list without `updated_at` whose live rows fit one page: that page, to see a deletion. */
  | { read: 'first-page'; onePage: true }
  | { read: 'nothing'; onePage: false; reason: 'verification not due' | 'the feed answers' }

/** Whether the resource's deletions show only in a complete walk (no count route, or no updated_at). */
export const verifiedByWalk = (resource: AnyResource) =>
  !resource.appendOnly && !(resource.routes.count && hasUpdatedAt(resource))

const latest = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b))

const due = (facts: SweepFacts, last: Date | null) =>
  verificationDue(facts.resource, last, facts.serviceCost, facts.verification, facts.now)

/** Whether the activity feed answers for every change to the resource since the watermark. */
export function feedAnswers(facts: SweepFacts): boolean {
  return FEED_COVERS.has(facts.resource.name) && feedCurrent(facts, facts.feed.coveredSince)
}

/**
 * Whether the feed has polled lately and done what `since` says (read the log without a gap, or written
 * every entry it read) since before the watermark.
 */
function feedCurrent(facts: SweepFacts, since: Date | null | undefined): boolean {
  const { feed, state } = facts
  if (feed.pollSeconds <= 0 || !state.watermark || !since || !feed.polledAt) return false
  // Two polls missed (and some slack): the feed is not answering; the sweep reads as without it.
  const lately = facts.now.getTime() - feed.polledAt.getTime() <= (2 * feed.pollSeconds + 10) * 1000
  return lately && since.getTime() <= state.watermark.getTime()
}

/** What a sweep that does not resume reads. */
export function planSweep(facts: SweepFacts): SweepPlan {
  const { resource, state } = facts
  const walked = verifiedByWalk(resource)
  // A walk-verified list no longer than the largest page it has shown: its first page shows it whole.
  const onePage =
    facts.mode === 'incremental' && walked && facts.liveRows > 0 && facts.liveRows <= state.largestPage
  if (facts.mode === 'full') return { read: 'everything', onePage: false }
  if (walked && due(facts, state.lastVerifiedAt)) return { read: 'everything', onePage }
  if (walked && !hasUpdatedAt(resource)) {
    if (onePage) return { read: 'first-page', onePage }
    return { read: 'nothing', onePage: false, reason: 'verification not due' }
  }
  const countDue = !walked && due(facts, latest(state.lastRemoteCountAt, state.lastVerifiedAt))
  if (!countDue && feedAnswers(facts)) return { read: 'nothing', onePage: false, reason: 'the feed answers' }
  // A page of the log held whole says nothing of what lies behind it (a gap, the feed's first poll,
  // which writes page 1 only, or a walk that failed leave entries behind pages the mirror holds),
  // unless the feed wrote every entry it read since the watermark and the page is within what it read.
  const feedReadTo = facts.feed.newestId
  if (
    resource.appendOnly &&
    resource.name === FEED_NAME &&
    typeof feedReadTo === 'number' &&
    feedCurrent(facts, facts.feed.logWrittenSince)
  )
    return { read: 'newest', watermark: state.watermark, onePage, feedReadTo }
  return { read: 'newest', watermark: state.watermark, onePage }
}

/**
 * Whether an incremental walk that stopped at its watermark takes the count: the walk saw newer
 * records, the sweep resumed (what its first attempt saw is not known), the last count no longer
 * matches the live rows (a walk after it tombstoned some), deliveries came since it, or a
 * verification is due.
 */
export function countDue(facts: SweepFacts, walked: { newer: number }): boolean {
  const { state } = facts
  if (walked.newer > 0 || facts.resumed) return true
  if (state.lastRemoteCount !== facts.liveRows) return true
  if (facts.deliveredSinceCount) return true
  return due(facts, latest(state.lastRemoteCountAt, state.lastVerifiedAt))
}

/** The one read of the state that a sweep's plan is made from. */
export async function readSweepFacts(
  ctx: SweepContext,
  claimed: { mode: 'full' | 'incremental'; checkpoint: unknown },
): Promise<SweepFacts> {
  const { db, resource, settings } = ctx
  const [state, liveRows, feed] = await Promise.all([
    readResourceState(db, resource.name),
    countLiveRows(db, resource),
    readFeedCoverage(db, FEED_NAME),
  ])
  const serviceCost = await serviceVerificationCost(
    resource.service,
    (other) => (other === resource ? Promise.resolve(liveRows) : countLiveRows(db, other)),
    settings.verification,
  )
  const counted = latest(state?.last_remote_count_at ?? null, state?.last_full_sync_at ?? null)
  const model = resource.webhookModel
  return {
    resource,
    mode: claimed.mode,
    resumed: claimed.checkpoint !== null,
    state: {
      watermark: state?.watermark ?? null,
      lastRemoteCount: state?.last_remote_count ?? null,
      lastRemoteCountAt: state?.last_remote_count_at ?? null,
      lastVerifiedAt: state?.last_verified_at ?? null,
      largestPage: state?.largest_page ?? 0,
    },
    liveRows,
    serviceCost,
    verification: settings.verification,
    feed: {
      pollSeconds: settings.feedPollSeconds ?? 0,
      coveredSince: feed?.coveredSince ?? null,
      polledAt: feed?.polledAt ?? null,
      logWrittenSince: feed?.logWrittenSince ?? null,
      newestId: feed?.newestId ?? null,
    },
    deliveredSinceCount: Boolean(counted && model && (await deliveredSince(db, model, counted))),
    now: new Date(),
  }
}
