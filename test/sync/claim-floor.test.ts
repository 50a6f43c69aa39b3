// Where a worker's next claim of the inbox starts (src/sync/delivery/claim-floor.ts): after the last
// delivery it took, below any delivery the receiver committed since, and from the beginning at least
// once a second.
import { describe, expect, it } from 'vitest'
import { createClaimFloor } from '../../src/sync/delivery/claim-floor.ts'

/** A claim that took deliveries up to `lastId` (undefined: none), started at `now`. */
function claim(floor: ReturnType<typeof createClaimFloor>, now: number, lastId: number | undefined) {
  const window = floor.start(now)
  window.end(lastId)
  return window.after
}

describe('the claim floor', () => {
  it('starts the first claim from the beginning, the next after the last delivery taken', () => {
    const floor = createClaimFloor(1_000)
    expect(claim(floor, 0, 25)).toBeUndefined()
    expect(claim(floor, 10, 50)).toBe(25)
    expect(claim(floor, 20, undefined)).toBe(50)
    expect(claim(floor, 30, undefined)).toBe(50)
  })

  it('goes back below a delivery the receiver committed after a claim passed its id', () => {
    const floor = createClaimFloor(1_000)
    claim(floor, 0, 50)
    floor.committed(42)
    expect(claim(floor, 10, 60)).toBe(41)
    expect(claim(floor, 20, undefined)).toBe(60)
  })

  it('stays below a delivery committed while a claim was reading, whatever that claim took', () => {
    const floor = createClaimFloor(1_000)
    claim(floor, 0, 50)
    const reading = floor.start(10)
    expect(reading.after).toBe(50)
    floor.committed(51) // committed after the claim's snapshot: it did not see 51
    reading.end(70)
    expect(claim(floor, 20, 90)).toBe(50)
  })

  it('keeps every open claim below a commit, when two claims overlap', () => {
    const floor = createClaimFloor(1_000)
    claim(floor, 0, 10)
    const first = floor.start(1)
    const second = floor.start(2)
    floor.committed(12)
    second.end(30)
    first.end(20)
    expect(claim(floor, 3, undefined)).toBe(11)
  })

  it('claims from the beginning after a commit it cannot name', () => {
    const floor = createClaimFloor(1_000)
    claim(floor, 0, 50)
    floor.committed()
    expect(claim(floor, 10, 60)).toBeUndefined()
    expect(claim(floor, 20, undefined)).toBe(60)
  })

  it('claims from the beginning again while such a claim comes back full (a replay of thousands)', () => {
    const floor = createClaimFloor(1_000)
    claim(floor, 0, 500)
    const first = floor.start(1_000)
    expect(first.after).toBeUndefined()
    first.end(200, true) // full: more may wait below the floor
    const second = floor.start(1_001)
    expect(second.after).toBeUndefined()
    second.end(400, false) // short: the backlog is taken
    expect(claim(floor, 1_002, undefined)).toBe(500)
  })

  it('claims from the beginning at least every interval, and such a claim does not lower the floor', () => {
    const floor = createClaimFloor(1_000)
    expect(claim(floor, 0, 100)).toBeUndefined()
    expect(claim(floor, 999, 120)).toBe(100)
    // a retry that fell due, far below the floor, is what such a claim takes
    expect(claim(floor, 1_000, 7)).toBeUndefined()
    expect(claim(floor, 1_500, undefined)).toBe(120)
    expect(claim(floor, 2_000, undefined)).toBeUndefined()
  })
})
