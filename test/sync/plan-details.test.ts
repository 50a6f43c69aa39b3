// How the details pass spends the CRM's budget (src/sync/plan/details.ts). One row a decision.
import { describe, expect, it } from 'vitest'
import { detailsPace, detailsWait } from '../../src/sync/plan/details.ts'

describe('detailsWait', () => {
  it.each([
    [{ share: 0.2, firstSync: false, freeShare: 1 }, null],
    // Its batch leaves a fifth free, where polls would yield.
    [{ share: 0.2, firstSync: false, freeShare: 0.4 }, null],
    [{ share: 0.2, firstSync: false, freeShare: 0.39 }, 'budget'],
    [{ share: 0.5, firstSync: false, freeShare: 0.69 }, 'budget'],
    [{ share: 0.5, firstSync: false, freeShare: 0.7 }, null],
    [{ share: 0.2, firstSync: true, freeShare: 1 }, 'first sync'],
    [{ share: 0, firstSync: false, freeShare: 1 }, 'off'],
  ])('%o: %s', (facts, waits) => {
    expect(detailsWait(facts)).toBe(waits)
  })
})

describe('detailsPace', () => {
  it.each([
    // share, requests a window, window seconds, requests a record → batch, period
    [0.2, 50, 10, 2, { batch: 5, periodSeconds: 10 }],
    [0.5, 50, 10, 2, { batch: 12, periodSeconds: 9.6 }],
    // A window's share pays for less than one record: one record, less often.
    [0.02, 50, 10, 2, { batch: 1, periodSeconds: 20 }],
    [0.01, 50, 10, 2, { batch: 1, periodSeconds: 40 }],
  ])('%d of %d a %d s window, %d a record: %o', (share, requests, windowSeconds, routes, pace) => {
    expect(detailsPace(share, requests, windowSeconds, routes)).toEqual(pace)
    // Never more than the share on average.
    expect((pace.batch * routes) / pace.periodSeconds).toBeLessThanOrEqual(
      (share * requests) / windowSeconds + 1e-9,
    )
  })
})
