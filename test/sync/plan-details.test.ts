// How the details pass spends the CRM's budget (src/sync/plan/details.ts). One row a decision.
import { describe, expect, it } from 'vitest'
import { detailsAllowance, detailsHorizon, detailsWait } from '../../src/sync/plan/details.ts'

describe('detailsWait', () => {
  const facts = { share: 0.2, firstSync: false, ownShare: 0 }
  it.each([
    [{ ...facts, freeShare: 1 }, null],
    // The rest must leave the pass its share and a fifth free, where polls would yield.
    [{ ...facts, freeShare: 0.4 }, null],
    [{ ...facts, freeShare: 0.39 }, 'budget'],
    // What the pass holds itself is not the rest's.
    [{ ...facts, freeShare: 0.3, ownShare: 0.1 }, null],
    [{ ...facts, freeShare: 0.29, ownShare: 0.1 }, 'budget'],
    [{ ...facts, share: 0.5, freeShare: 0.69 }, 'budget'],
    [{ ...facts, share: 0.5, freeShare: 0.2, ownShare: 0.5 }, null],
    [{ ...facts, firstSync: true, freeShare: 1 }, 'first sync'],
    [{ ...facts, share: 0, freeShare: 1 }, 'off'],
  ])('%o: %s', (input, waits) => {
    expect(detailsWait(input)).toBe(waits)
  })
})

describe('detailsAllowance', () => {
  it.each([
    // share, requests a window, requests a record, spent within the horizon → records now
    [0.2, 50, 2, 0, 5],
    [0.2, 50, 2, 6, 2],
    [0.2, 50, 2, 10, 0],
    // A page more than planned: the next window pays for it.
    [0.2, 50, 2, 11, 0],
    [0.5, 50, 2, 0, 12],
    // One request a window: a record every two windows.
    [0.02, 50, 2, 0, 1],
    [0.02, 50, 2, 1, 0],
    [0.01, 50, 2, 0, 1],
    // 29% of 200 is 58 requests (57.99999999999999 unrounded): 29 records, not 28.
    [0.29, 200, 2, 0, 29],
  ])('%d of %d a window, %d a record, %d spent: %d', (share, requests, routes, spent, records) => {
    expect(detailsAllowance(share, requests, routes, spent)).toBe(records)
  })

  it.each([
    [0.2, 50, 2, 1],
    [0.02, 50, 2, 2],
    [0.01, 50, 2, 4],
  ])('%d of %d a window, %d a record: counted over %d windows', (share, requests, routes, windows) => {
    expect(detailsHorizon(share, requests, routes)).toBe(windows)
  })
})
