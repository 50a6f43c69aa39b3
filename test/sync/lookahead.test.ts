// Requests in flight for a walk to the end (src/sync/sweep/lookahead.ts): as deep as the budget's rate
// times the latency, one page over loopback, the pages sent ahead handed over rather than asked again.
import { describe, expect, it } from 'vitest'
import type { RecordPage } from '../../src/api-client/index.ts'
import { depthFor, lookahead } from '../../src/sync/sweep/lookahead.ts'

describe('depthFor', () => {
  it.each([
    [5, 5, 1],
    [150, 5, 1],
    [300, 5, 2],
    [600, 5, 3],
    [2000, 5, 4],
    [300, 1000, 4],
    [10, 1000, 1],
  ])('%i ms at %i requests/s: %i in flight', (latencyMs, perSecond, depth) => {
    expect(depthFor(latencyMs, perSecond)).toBe(depth)
  })
})

describe('a lookahead', () => {
  /** Pages answered after `latencyMs`; counts every request and the most in flight at once. */
  function upstream(latencyMs: number) {
    const asked: number[] = []
    let inFlight = 0
    let most = 0
    const fetchPage = async (page: number): Promise<RecordPage> => {
      asked.push(page)
      most = Math.max(most, ++inFlight)
      await new Promise((resolve) => setTimeout(resolve, latencyMs))
      inFlight--
      // The time the upstream took, as the client measures it.
      return {
        page,
        size: 1,
        records: [{ id: page }],
        rejected: [],
        fetchedAt: new Date(),
        tookMs: latencyMs,
      }
    }
    return { fetchPage, asked, most: () => most }
  }

  /** A walk of `pages` pages that asks for the next page as soon as one arrives. */
  async function walk(
    ahead: ReturnType<typeof lookahead>,
    pages: number,
    lastPage = Number.POSITIVE_INFINITY,
  ) {
    let next = ahead.fetch(1)
    for (let page = 1; page <= pages; page++) {
      await next
      if (page < pages) {
        next = ahead.fetch(page + 1)
        ahead.ahead(page, lastPage)
      }
    }
    await ahead.settle()
  }

  it('keeps as many requests in flight as the latency asks, each page asked once', async () => {
    const slow = upstream(100)
    // 100 ms at 25 requests/s: three in flight.
    await walk(lookahead(slow.fetchPage, 25), 10)
    expect(slow.most()).toBe(3)
    // Pages 1-10, and at most two past the end.
    expect(new Set(slow.asked).size).toBe(slow.asked.length)
    expect(slow.asked.slice(0, 10).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(slow.asked.length).toBeLessThanOrEqual(12)
  })

  it('sends nothing ahead past the last page it is told of', async () => {
    const slow = upstream(100)
    await walk(lookahead(slow.fetchPage, 25), 10, 10)
    expect(slow.asked.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })

  it('keeps one in flight where requests are quick', async () => {
    const quick = upstream(1)
    await walk(lookahead(quick.fetchPage, 1000), 10)
    expect(quick.most()).toBe(1)
    expect(quick.asked).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })
})
