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
  let held = false
  const poll = () => {
    clearTimeout(timer)
    polling ??= (async () => {
      try {
        // Not `onPolled?.(await pollOnce())`: an optional call skips its arguments when absent.
        const result = await feed.pollOnce()
        held = result.status === 'polled'
        deps.onPolled?.(result)
      } catch (error) {
        deps.logger.warn({ err: error }, 'activity feed: poll failed; the next one tries again')
      }
      polling = null
      if (!stopped) timer = setTimeout(poll, deps.pollSeconds * 1000).unref()
    })()
  }
  const keeper = setInterval(async () => {
    try {
      const holds = await feed.keep()
      if (holds && !held && !stopped) {
        deps.logger.info({ owner: feed.owner }, 'activity feed: took the lease over; polling now')
        held = true
        poll()
      }
      held = holds
    } catch (error) {
      deps.logger.debug({ err: error }, 'activity feed: could not keep the lease')
    }
  }, KEEP_SECONDS * 1000).unref()
  poll()
  return {
    async stop() {
      stopped = true
      clearInterval(keeper)
      clearTimeout(timer)
      await polling
      await feed.release().catch(() => {})
    },
  }
}
