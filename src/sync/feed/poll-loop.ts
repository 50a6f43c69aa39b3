// The loop of a freshness poll in a running crm-sync (the activity feed, activity-feed.ts, and the
// newest-page polls, newest-page.ts): a poll at start and then every `pollSeconds` after each one ends,
// and the poll's lease kept every KEEP_SECONDS in between, so that a replica that takes it over from one
// that died polls at once. A poll yields to the work that needs the budget more: while less than a fifth
// of its service's budget is free (sweeps, reconciliation, a burst of refreshes), it waits a period.
import type { Logger } from '../../log.ts'

/** The lease of every poll is renewed this often, by the replica holding it, polling or not. */
export const KEEP_SECONDS = 2

export interface PollOutcome {
  /** `standby`: another replica holds the poll's lease. */
  status: 'polled' | 'standby'
}

export interface Poller<R extends PollOutcome> {
  /** Polls once, if this replica holds (or takes) the poll's lease. */
  pollOnce(): Promise<R>
  /** Renews the lease, or takes it when it has lapsed; true while this replica holds it. */
  keep(): Promise<boolean>
  /** Who holds the lease when this replica does: host, process id and a random part. */
  owner: string
  /** Lets the lease go. */
  release(): Promise<void>
}

export interface PollLoopOptions<R> {
  pollSeconds: number
  logger: Logger
  /** What is polled, for the log. */
  name: string
  onPolled?(result: R): void
  /** True while the budget is needed by other work: the poll waits a period instead. */
  yields?(): Promise<boolean>
  onYielded?(): void
}

/**
 * Polls at once and then `pollSeconds` after each poll ends, until stopped; keeps the lease every
 * KEEP_SECONDS meanwhile, and polls at once when it takes the lease over from a replica that died.
 */
export function startPolling<R extends PollOutcome>(
  poller: Poller<R>,
  options: PollLoopOptions<R>,
): { stop(): Promise<void> } {
  const { logger } = options
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
        if (await options.yields?.()) {
          options.onYielded?.()
        } else {
          const result = await poller.pollOnce()
          if (result.status === 'polled') held = true
          // Not `onPolled?.(await pollOnce())`: an optional call skips its arguments when absent.
          options.onPolled?.(result)
        }
      } catch (error) {
        // A stop cuts off the poll's requests: that is no failure.
        if (stopped) logger.debug({ err: error }, `${options.name}: poll cut off by the stop`)
        else logger.warn({ err: error }, `${options.name}: poll failed; the next one tries again`)
      }
      polling = null
      if (!stopped) timer = setTimeout(poll, options.pollSeconds * 1000).unref()
    })()
  }
  const keep = async () => {
    try {
      const holds = await poller.keep()
      if (holds && !held && !stopped && !polling) {
        logger.info({ owner: poller.owner }, `${options.name}: took the lease over; polling now`)
        poll()
      }
      held = holds
    } catch (error) {
      logger.debug({ err: error }, `${options.name}: could not keep the lease`)
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
      await poller.release().catch(() => {})
    },
  }
}
