// Requests in flight for a walk that reads to the end. One page request at a time cannot spend a budget
// of 5 requests a second when each takes 300 ms: a complete walk keeps as many page requests in flight
// as its service's budget rate times the upstream's latency (from sending a request to its answer, the
// wait for the budget not counted), at least one and at most MAX_DEPTH, all within the shared budget.
// The next pages are requested before the walk asks for them and handed over when it does. Pages past
// the end cost at most MAX_DEPTH - 1 requests a walk, none where a count bounds it. An incremental walk,
// which stops at its watermark, keeps one page in flight, and so does any walk while requests take
// under 50 ms.
import type { RecordPage } from '../../api-client/index.ts'

const MAX_DEPTH = 4
/**
 * Below this latency one request in flight keeps up: the walk's pace is its writes then (a page of 250
 * takes tens of milliseconds to apply), and what is sent ahead past the end would only cost requests.
 */
const QUICK_MS = 50
/** Weight of the newest latency in the running estimate. */
const WEIGHT = 0.3

export interface Lookahead {
  /** The page: the request sent ahead for it, or a new one. */
  fetch(page: number): Promise<RecordPage>
  /**
   * Page `page` has arrived and the walk goes on (to `lastPage` at most): request the pages after the
   * next one, as deep as the latency asks. The next one is the walk's own request.
   */
  ahead(page: number, lastPage: number): void
  /** Waits for the requests sent ahead and not taken (their cost is counted, nothing runs behind). */
  settle(): Promise<void>
}

/** Pages in flight that spend `perSecond` requests a second when each takes `latencyMs`. */
export function depthFor(latencyMs: number, perSecond: number): number {
  if (latencyMs < QUICK_MS) return 1
  return Math.min(MAX_DEPTH, Math.max(1, Math.ceil((latencyMs / 1000) * perSecond)))
}

export function lookahead(fetchPage: (page: number) => Promise<RecordPage>, perSecond: number): Lookahead {
  const sent = new Map<number, Promise<RecordPage>>()
  let latencyMs: number | null = null
  const timed = (page: number) => {
    const request = fetchPage(page)
    request.then(
      ({ tookMs }) => {
        if (tookMs === undefined) return
        latencyMs = latencyMs === null ? tookMs : latencyMs + WEIGHT * (tookMs - latencyMs)
      },
      () => {},
    )
    return request
  }
  return {
    fetch(page) {
      const request = sent.get(page)
      sent.delete(page)
      return request ?? timed(page)
    },
    ahead(page, lastPage) {
      if (latencyMs === null) return
      const last = Math.min(lastPage, page + depthFor(latencyMs, perSecond))
      for (let next = page + 2; next <= last; next++) {
        if (!sent.has(next)) sent.set(next, timed(next))
      }
    },
    async settle() {
      await Promise.allSettled(sent.values())
      sent.clear()
    },
  }
}
