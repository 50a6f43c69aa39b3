// Whether a freshness poll spends its service's budget now (src/sync/plan/polls.ts). One row a decision.
import { describe, expect, it } from 'vitest'
import { pollWaits } from '../../src/sync/plan/polls.ts'

describe('pollWaits', () => {
  it.each([
    [{ firstSync: false, freeShare: 1 }, null],
    [{ firstSync: false, freeShare: 0.2 }, null],
    [{ firstSync: false, freeShare: 0.19 }, 'budget'],
    [{ firstSync: false, freeShare: 0 }, 'budget'],
    [{ firstSync: true, freeShare: 1 }, 'first sync'],
  ])('%o: %s', (facts, waits) => {
    expect(pollWaits(facts)).toBe(waits)
  })
})
