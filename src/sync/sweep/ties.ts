// Tie groups at page boundaries: records that share the walk's sort key (`updated_at`, whole seconds)
// across the end of one page and the start of the next. Nothing promises that the upstream breaks
// such ties the same way on every request (`ORDER BY updated_at LIMIT … OFFSET …` without a
// tie-breaker may not), so a record of a group that straddles a boundary can be missing from both
// pages: after its page ends on the first request and before it starts on the second. Bulk imports and
// mass edits make groups larger than a page. docs/how-sync-works.md, "Ties at page boundaries".
//
// Offset paging still places the group at known positions: every position from its first to its last
// holds one of its records, whatever their order. A group is seen whole when it showed as many distinct
// records as it covered positions. When it did not, it is read again (tie-reads.ts): one request whose
// page holds the group and a neighbour on each side, when a page size up to the walk's own lets a page
// boundary fall outside it; else rounds of the requests chosen here, until the distinct records reach
// the positions the group covers.
import type { RecordId } from '../../resources/index.ts'
import type { WalkCheckpoint } from './checkpoint.ts'

/** A run of neighbours with one sort key, as the walk met it. */
export interface TieGroup {
  time: number
  /** Page (1-based, as requested) and index of its first record. */
  startPage: number
  startIndex: number
  /** Page of its last record so far. */
  endPage: number
  /** Positions it covered across the pages read. */
  positions: number
  ids: Set<RecordId>
  /** The walk's page size when it began: its first position is `(startPage - 1) * pageSize + startIndex`. */
  pageSize: number
}

export interface TieTracker {
  /** The group the last record read belongs to: it may go on on the next page. */
  open: TieGroup | null
}

/**
 * Feeds a page's records (their times and ids, in page order) to the tracker; returns the groups this
 * page closed that covered more than one page and showed fewer records than positions.
 */
export function trackTies(
  tracker: TieTracker,
  page: number,
  pageSize: number,
  records: readonly { time: number; id: RecordId }[],
): TieGroup[] {
  const unseen: TieGroup[] = []
  records.forEach(({ time, id }, index) => {
    const open = tracker.open
    if (open && time === open.time) {
      open.positions++
      open.ids.add(id)
      open.endPage = page
      return
    }
    if (open && isPartial(open)) unseen.push(open)
    // A record without a time (the upstream's error) belongs to no group, and ends the one before.
    tracker.open = Number.isFinite(time)
      ? {
          time,
          startPage: page,
          startIndex: index,
          endPage: page,
          positions: 1,
          ids: new Set([id]),
          pageSize,
        }
      : null
  })
  return unseen
}

/** The open group, when the walk has ended and it covered more than one page without showing whole. */
export function closeTies(tracker: TieTracker): TieGroup | null {
  const open = tracker.open
  tracker.open = null
  return open && isPartial(open) ? open : null
}

/** Across a page boundary, with fewer distinct records than positions. */
const isPartial = (group: TieGroup) => group.endPage > group.startPage && group.ids.size < group.positions

// A group's ids travel in the checkpoint up to this many; a larger group (4 pages of 250 or more) makes
// the walk resume at the page where it began instead, to read it again whole.
const SAVED_IDS = 1000

/**
 * The checkpoint after a page: with the group of ties the page ended in, which the next page may go
 * on; or, for a group too large to carry, pointing back to the page where it began. While a group the
 * page closed has yet to be read again (`unread`), it points back to where that group began: a walk
 * stopped before that read (killed, shut down) reads the group again rather than going on without it.
 */
export function savedTies(
  tracker: TieTracker,
  checkpoint: WalkCheckpoint,
  unread: readonly TieGroup[] = [],
): WalkCheckpoint {
  if (unread.length) {
    const start = Math.min(...unread.map((group) => group.startPage))
    return { ...checkpoint, nextPage: Math.min(checkpoint.nextPage, start), tie: undefined }
  }
  const open = tracker.open
  if (!open) return { ...checkpoint, tie: undefined }
  if (open.ids.size > SAVED_IDS) return { ...checkpoint, nextPage: open.startPage, tie: undefined }
  return { ...checkpoint, tie: { ...open, ids: [...open.ids] } }
}

/** The tracker of a walk resumed at a checkpoint (a fresh one without a saved group). */
export function resumeTies(saved: WalkCheckpoint['tie']): TieTracker {
  return { open: saved ? { ...saved, ids: new Set(saved.ids) } : null }
}

/** A page request: `perPage` records from `(page - 1) * perPage`. */
export interface PageRequest {
  page: number
  perPage: number
}

/**
 * One request whose page holds positions `first` to `last` (0-based, both included): the largest page
 * size up to `maxSize` with no page boundary between them, but the walk's own (`walkSize`: that would
 * be a page the walk asked for, and an upstream may order one query the same way every time). The
 * largest, for the most groups of ties beside this one to compare with the walk's pages
 * (tie-order.ts). Null when none has.
 */
export function windowFor(first: number, last: number, maxSize: number, walkSize = 0): PageRequest | null {
  for (let size = maxSize; size >= last - first + 1; size--) {
    if (size !== walkSize && Math.floor(first / size) === Math.floor(last / size)) {
      return { page: Math.floor(first / size) + 1, perPage: size }
    }
  }
  return null
}

/**
 * The pages for one round of reading a group larger than a page (positions `groupFirst` to `groupLast`)
 * again, when every answer orders the group anew: of the pages of one size from half `maxSize` up,
 * but those asked for before (`used`, by `requestsKey`: an upstream may order one query the same way
 * every time), the pages with the fewest requests expected until every record showed. A record hides
 * from a round with the chance `miss`, the product over its pages of the share of the group each page
 * does not hold, so the rounds needed grow as 1 / -ln(miss), each costing its pages. `bounded`: the
 * pages cover `first` to `last` (the group's neighbours too, which tell whether it moved); otherwise a
 * single page over most of the group is a candidate as well, the cheapest way to see most of it.
 */
export function roundPages(
  first: number,
  last: number,
  groupFirst: number,
  groupLast: number,
  maxSize: number,
  used: ReadonlySet<string>,
  bounded = true,
): PageRequest[] {
  const size = groupLast - groupFirst + 1
  let best: { pages: PageRequest[]; cost: number } | null = null
  const consider = (pages: PageRequest[], perPage: number) => {
    if (used.has(requestsKey(pages))) return
    let miss = 1
    for (const { page } of pages) {
      const start = (page - 1) * perPage
      const part = Math.min(start + perPage - 1, groupLast) - Math.max(start, groupFirst) + 1
      miss *= 1 - Math.max(0, part) / size
    }
    const cost = miss <= 0 ? pages.length : pages.length / -Math.log(miss)
    if (Number.isFinite(cost) && (!best || cost < best.cost)) best = { pages, cost }
  }
  for (let perPage = maxSize; perPage >= Math.max(1, Math.ceil(maxSize / 2)); perPage--) {
    consider(pagesCovering(first, last, perPage), perPage)
    if (bounded) continue
    for (const { page } of pagesCovering(groupFirst, groupLast, perPage))
      consider([{ page, perPage }], perPage)
  }
  // Assigned in `consider`, which the compiler's narrowing does not follow.
  const chosen = best as { pages: PageRequest[] } | null
  return chosen?.pages ?? pagesCovering(first, last, maxSize)
}

/**
 * The bounds of a group in answers to `asked`: the position of a tied record after one that is not
 * (or at the start of the index), and of a tied record before one that is not (or at its end); null
 * where the answers show none.
 */
export function boundsIn<R>(
  asked: readonly PageRequest[],
  answers: readonly { size: number; records: readonly R[] }[],
  isTied: (record: R | undefined) => boolean,
): { start: number | null; end: number | null } {
  let start: number | null = null
  let end: number | null = null
  answers.forEach((answer, n) => {
    const { page, perPage } = asked[n] as PageRequest
    const base = (page - 1) * perPage
    const { records } = answer
    records.forEach((record, i) => {
      if (!isTied(record)) return
      const afterOther = i > 0 ? !isTied(records[i - 1]) : base === 0
      const beforeOther = i < records.length - 1 ? !isTied(records[i + 1]) : answer.size < perPage
      if (afterOther && start === null) start = base + i
      if (beforeOther) end = base + i
    })
  })
  return { start, end }
}

/** Tells requests apart: `3x250,4x250`. */
export const requestsKey = (pages: readonly PageRequest[]) =>
  pages.map((page) => `${page.page}x${page.perPage}`).join()

/** The pages of `size` that cover positions `first` to `last`. */
export function pagesCovering(first: number, last: number, size: number): PageRequest[] {
  const pages: PageRequest[] = []
  for (let page = Math.floor(first / size) + 1; (page - 1) * size <= last; page++) {
    pages.push({ page, perPage: size })
  }
  return pages
}
