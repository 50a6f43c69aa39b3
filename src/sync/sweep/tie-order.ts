// Whether an upstream orders ties the same way on every request, learnt per resource from the groups
// read again (tie-reads.ts); docs/how-sync-works.md, "Ties at page boundaries".
//
// Where ties keep one order, a group that straddles a page boundary hides nothing: a record seen twice
// there is the shift of records that changed meanwhile (they jump to the front), not a record that a
// new order pushed past the boundary. Both look alike on the walk's pages; reading the group again
// tells them apart, and costs a request every time, and heavy change puts such a shift into every
// group. So the first groups are always read again, and each reading compares the order it shows
// with the walk's: an upstream that ties anew on every request shows the same order of k records
// with a chance of 1/k! (and hides records, which the reading finds), so agreement is evidence worth
// log2(k!) bits. Past TRUSTED_BITS of it and no disagreement since, only every RECHECK_EVERY-th group
// is read again, to keep checking; a reading that disagrees or finds a hidden record starts over.
import type { RecordId } from '../../resources/index.ts'

/** What the groups read again have shown of one resource's order of ties. */
export interface TieOrderEvidence {
  /** Bits of agreement since the last disagreement. */
  bits: number
  /** Groups left unread since the last one read again. */
  skipped: number
}

// 30 bits: an upstream ordering ties at random passes with a chance under one in a billion.
const TRUSTED_BITS = 30
const RECHECK_EVERY = 8

const FRESH: TieOrderEvidence = { bits: 0, skipped: 0 }

/** Whether the evidence says that ties keep their order. */
export const trusted = (evidence: TieOrderEvidence) => evidence.bits >= TRUSTED_BITS

/** Whether a group that straddled a page boundary without showing whole is to be read again. */
export function readsAgain(evidence: TieOrderEvidence): boolean {
  return !trusted(evidence) || evidence.skipped + 1 >= RECHECK_EVERY
}

/**
 * The bits of agreement between the order of a group on the walk's pages and the order a reading again
 * showed (each the ids in the order first seen), over the records both showed; null when they
 * disagree, or when the reading found records the walk had not seen.
 */
export function agreement(
  walk: readonly RecordId[],
  again: readonly RecordId[],
  hidden: number,
): number | null {
  if (hidden > 0) return null
  const inWalk = new Set(walk)
  const common = again.filter((id) => inWalk.has(id))
  const inAgain = new Set(common)
  const walkOrder = walk.filter((id) => inAgain.has(id))
  if (walkOrder.some((id, i) => id !== common[i])) return null
  // log2(k!)
  let bits = 0
  for (let k = 2; k <= common.length; k++) bits += Math.log2(k)
  return bits
}

/** The evidence after a group was read again (`bits` from `agreement`) or left unread (`skipped`). */
export function learnt(
  evidence: TieOrderEvidence,
  seen: { bits: number | null } | 'skipped',
): TieOrderEvidence {
  if (seen === 'skipped') return { ...evidence, skipped: evidence.skipped + 1 }
  if (seen.bits === null) return FRESH
  return { bits: evidence.bits + seen.bits, skipped: 0 }
}

/** The evidence of every resource, for the life of the process (each process learns its own). */
export interface TieOrders {
  /** Whether the next group of `resource` that straddled a boundary without showing whole is read again. */
  readsAgain(resource: string): boolean
  /** What reading a group again showed; returns whether the order is trusted now, when that changed. */
  learn(
    resource: string,
    walk: readonly RecordId[],
    again: readonly RecordId[],
    hidden: number,
  ): 'trusted' | 'distrusted' | undefined
}

export function tieOrders(): TieOrders {
  const evidence = new Map<string, TieOrderEvidence>()
  const of = (resource: string) => evidence.get(resource) ?? FRESH
  return {
    readsAgain(resource) {
      const now = of(resource)
      const read = readsAgain(now)
      if (!read) evidence.set(resource, learnt(now, 'skipped'))
      return read
    },
    learn(resource, walk, again, hidden) {
      const before = of(resource)
      const after = learnt(before, { bits: agreement(walk, again, hidden) })
      evidence.set(resource, after)
      if (trusted(before) === trusted(after)) return undefined
      return trusted(after) ? 'trusted' : 'distrusted'
    },
  }
}
