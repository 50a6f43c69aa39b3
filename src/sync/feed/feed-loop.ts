// The activity feed's loop in a running crm-sync: a poll at start and then every ACTIVITY_POLL_SECONDS
// after each one ends, and the lease kept every KEEP_SECONDS in between, so that a replica that takes it
// over from one that died polls at once (activity-feed.ts).
import { type ActivityFeedDeps, createActivityFeed, KEEP_SECONDS } from './activity-feed.ts'

/**
 * Polls at once and then `pollSeconds` after each poll ends, until stopped; keeps the lease every
 * KEEP_SECONDS meanwhile, and polls at once when it takes the lease over from a replica that died.
 */
export function startActivityFeed(deps: ActivityFeedDeps): { stop(): Promise<void> } {
  const feed = createActivityFeed(deps)
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let polling: Promise<void> | null = null
  let keeping: Promise<void> | null = null
  // Whether this replica held the lease at its last poll or keep.
  let held = false
  const poll = () => {
    clearTimeout(timer)
    polling ??= (async () => {
      try {
        const result = await feed.pollOnce()
        if (result.status === 'polled') held = true
        // Not `onPolled?.(await pollOnce())`: an optional call skips its arguments when absent.
        deps.onPolled?.(result)
      } catch (error) {
        deps.logger.warn({ err: error }, 'activity feed: poll failed; the next one tries again')
      }
      polling = null
      if (!stopped) timer = setTimeout(poll, deps.pollSeconds * 1000).unref()
    })()
  }
  const keep = async () => {
    try {
      const holds = await feed.keep()
      if (holds && !held && !stopped && !polling) {
        deps.logger.info({ owner: feed.owner }, 'activity feed: took the lease over; polling now')
        poll()
      }
      held = holds
    } catch (error) {
      deps.logger.debug({ err: error }, 'activity feed: could not keep the lease')
    }
  }
  const keeper = setInterval(() => {
    keeping ??= keep().finally(() => {
      keeping = null
    })
  }, KEEP_SECONDS * 1000).unref()
  poll()
  return {
    async stop() {
      stopped = true
      clearInterval(keeper)
      clearTimeout(timer)
      // A keep in flight could take the lease again after the release: let it end first.
      await Promise.all([polling, keeping])
      await feed.release().catch(() => {})
    },
  }
}
