// Whether an upstream orders ties the same way on every request, learnt per resource from the groups
// read again (tie-reads.ts); docs/how-sync-works.md, "Ties at page boundaries".
//
// Where ties keep one order, a group that straddles a page boundary hides nothing: a record seen twice
// there is the shift of records that changed meanwhile (they jump to the front), not a record that a
// new order pushed past the boundary. Both look alike on the walk's pages; reading the group again
// tells them apart, and costs a request every time, and heavy change puts such a shift into every
// group. So the first groups are always read again, and each reading (a page as large as the walk's,
// at another offset: another query) compares the order of every group of ties it shows with the
// order the walk's pages showed: an upstream that ties anew on every request shows the same order of
// k records with a chance of 1/k! (and hides records, which the reading finds), so agreement is
// evidence worth log2(k!) bits. Past TRUSTED_BITS of it and no disagreement since, only every
// RECHECK_EVERY-th group is read again, to keep checking; a reading that disagrees or finds a hidden
// record starts over.
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

/** A record as a page showed it: its id and its sort key. */
export interface Sighting {
  id: RecordId
  time: number
}

/**
 * The bits of agreement between the order of the groups of ties on the walk's pages and in a reading
 * again (each in page order), over the records of each group that both showed; null when any group's
 * order disagrees, or when the reading found records of the group read again that the walk had not
 * seen (`hidden`).
 */
export function agreement(
  walk: readonly Sighting[],
  again: readonly Sighting[],
  hidden: number,
): number | null {
  if (hidden > 0) return null
  // A record that changed in between left its group: only records with one time in both count.
  const timeIn = (records: readonly Sighting[]) => {
    const times = new Map<RecordId, number>()
    for (const { id, time } of records) if (!times.has(id)) times.set(id, time)
    return times
  }
  const walkTimes = timeIn(walk)
  const againTimes = timeIn(again)
  const common = (id: RecordId, time: number) => walkTimes.get(id) === time && againTimes.get(id) === time
  const byTime = (records: readonly Sighting[]) => {
    const groups = new Map<number, RecordId[]>()
    const seen = new Set<RecordId>()
    for (const { id, time } of records) {
      if (seen.has(id) || !Number.isFinite(time) || !common(id, time)) continue
      seen.add(id)
      const group = groups.get(time)
      if (group) group.push(id)
      else groups.set(time, [id])
    }
    return groups
  }
  const shown = byTime(again)
  const walked = byTime(walk)
  let bits = 0
  for (const [time, ids] of shown) {
    const before = walked.get(time) ?? []
    if (before.length !== ids.length || before.some((id, i) => id !== ids[i])) return null
    // log2(k!)
    for (let k = 2; k <= ids.length; k++) bits += Math.log2(k)
  }
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
    walk: readonly Sighting[],
    again: readonly Sighting[],
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
