// With the activity feed on (ACTIVITY_POLL_SECONDS), the log names every create, update and destroy of
// the resources it covers, and the feed refreshes each record it names within a poll. An incremental
// sweep of such a resource then has nothing to read on its newest pages, as long as the feed has read
// the log without a gap since the sweep's watermark and polled lately: the sweep reads nothing, and an
// idle CRM costs the feed's one request a poll for those resources instead of one or two each a cycle.
// Verification is not the feed's to answer (silent cascades, tags that leave `updated_at` alone): when
// a count or a complete walk is due, the sweep runs as without the feed.
import { readFeedCoverage } from '../../store/activity-feed.ts'
import { FEED_COVERS, FEED_NAME } from '../feed/activity-feed.ts'
import type { SweepContext } from './context.ts'

/** Whether the feed answers for every change to the resource since `watermark`. */
export async function answeredByFeed(
  ctx: SweepContext,
  watermark: Date | null | undefined,
): Promise<boolean> {
  const pollSeconds = ctx.settings.feedPollSeconds ?? 0
  if (pollSeconds <= 0 || !watermark || !FEED_COVERS.has(ctx.resource.name)) return false
  const coverage = await readFeedCoverage(ctx.db, FEED_NAME)
  if (!coverage?.coveredSince || !coverage.polledAt) return false
  // Two polls missed (and some slack): the feed is not answering; the sweep reads as without it.
  const lately = Date.now() - coverage.polledAt.getTime() <= (2 * pollSeconds + 10) * 1000
  return lately && coverage.coveredSince.getTime() <= watermark.getTime()
}
