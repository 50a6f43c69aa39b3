// Where a worker's next claim of the inbox starts. Every processed delivery leaves an entry in the
// pending index until the table is vacuumed (once a minute at best), and a claim from the start of
// that index walks all of them: at 1,000 deliveries a second, 8 ms a claim half a minute after a
// vacuum. A claim that starts after the last delivery this process took walks none
// (docs/performance.md, "Ingest").
//
// What it may pass over, and how it is still taken:
// - a delivery of this process's receiver committed after a claim read past its id (inserts commit
//   out of order): the receiver names every id it commits (`committed`), and the floor goes back below
//   it, even when the claim that passed it ends later;
// - a delivery of another replica, a retry whose time has come, a replayed delivery: a claim from the
//   start of the index, at least every `fullEveryMs`, takes them; while such a claim comes back full
//   (a replay of thousands), the next starts from the beginning too.

/** How often a claim starts from the beginning of the inbox, whatever the floor says. */
export const FULL_CLAIM_EVERY_MS = 1_000

export interface ClaimFloor {
  /** Where the next claim starts: deliveries of a greater id, or undefined (from the beginning). */
  start(now: number): ClaimWindow
  /** The receiver committed this delivery (no id: one it cannot name). */
  committed(id?: number): void
}

export interface ClaimWindow {
  after: number | undefined
  /** The claim took deliveries up to this id (the greatest it took), or none; `full`: as many as it asked. */
  end(lastId: number | undefined, full?: boolean): void
}

export function createClaimFloor(fullEveryMs = FULL_CLAIM_EVERY_MS): ClaimFloor {
  // Every delivery of an id up to `floor` has been taken, is held by a claim of this process, or will
  // be taken by the next claim from the beginning.
  let floor = 0
  let lastFull = Number.NEGATIVE_INFINITY
  // The last claim from the beginning came back full: more may wait below the floor.
  let backlog = false
  // Claims in flight, each with the lowest id committed since it read the inbox.
  const open = new Set<{ lowest: number }>()

  return {
    start(now) {
      const fromStart = backlog || now - lastFull >= fullEveryMs || floor <= 0
      if (fromStart) lastFull = now
      const window = { lowest: Number.POSITIVE_INFINITY }
      open.add(window)
      return {
        after: fromStart ? undefined : floor,
        end(lastId, full = false) {
          open.delete(window)
          if (fromStart) backlog = full
          if (lastId !== undefined) floor = Math.max(floor, Math.min(lastId, window.lowest - 1))
        },
      }
    },
    committed(id) {
      const lowest = id ?? 0
      floor = Math.min(floor, lowest - 1)
      for (const window of open) window.lowest = Math.min(window.lowest, lowest)
    },
  }
}
