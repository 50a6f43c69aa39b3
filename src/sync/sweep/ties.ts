// Tie groups at page boundaries: records that share the walk's sort key (`updated_at`, whole seconds)
// across the end of one page and the start of the next. Nothing promises that the upstream breaks
// such ties the same way on every request (`ORDER BY updated_at LIMIT … OFFSET …` without a
// tie-breaker may not), so a record of a group that straddles a boundary can be missing from both
// pages: after its page ends on the first request and before it starts on the second. Bulk imports and
// mass edits make groups larger than a page. docs/how-sync-works.md, "Ties at page boundaries".
//
// Offset paging still places the group at known positions: every position from its first to its last
// holds one of its records, whatever their order. A group is seen whole when it showed as many distinct
// records as it covered positions. When it did not, it is read again: one request whose page holds the
// group and a neighbour on each side, when a page size up to the walk's own lets a page boundary fall
// outside it; else the pages around it again, with another page size each round, until the distinct
// records reach the positions the group covers.
import type { FetchedRecord, Order, RecordPage } from '../../api-client/index.ts'
import type { RecordId } from '../../resources/index.ts'
import type { SweepContext, WalkCheckpoint } from './context.ts'

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
 * on; or, for a group too large to carry, pointing back to the page where it began.
 */
export function savedTies(tracker: TieTracker, checkpoint: WalkCheckpoint): WalkCheckpoint {
  const open = tracker.open
  if (!open) return { ...checkpoint, tie: undefined }
  if (open.ids.size > SAVED_IDS) return { ...checkpoint, nextPage: open.startPage, tie: undefined }
  return { ...checkpoint, tie: { ...open, ids: [...open.ids] } }
}

/** The tracker of a walk resumed at a checkpoint (a fresh one without a saved group). */
export function resumeTies(saved: WalkCheckpoint['tie']): TieTracker {
  return { open: saved ? { ...saved, ids: new Set(saved.ids) } : null }
}

/**
 * Reads the groups that straddled a page boundary without showing whole, one after the other (while
 * the walk is not aborted): the records they had hidden, as pages to apply.
 */
export async function readTieGroups(
  ctx: SweepContext,
  order: Order,
  groups: readonly (TieGroup | null)[],
  key: (record: Record<string, unknown>) => RecordId,
): Promise<RecordPage[]> {
  const found: RecordPage[] = []
  for (const group of groups) {
    if (!group || ctx.aborted()) continue
    const hidden = await readTieGroup(ctx, order, group, key)
    if (hidden) found.push(hidden)
  }
  return found
}

/** A page request: `perPage` records from `(page - 1) * perPage`. */
export interface PageRequest {
  page: number
  perPage: number
}

/**
 * One request whose page holds positions `first` to `last` (0-based, both included): the smallest page
 * size up to `maxSize` with no page boundary between them. Null when none has.
 */
export function windowFor(first: number, last: number, maxSize: number): PageRequest | null {
  for (let size = last - first + 1; size <= maxSize; size++) {
    if (Math.floor(first / size) === Math.floor(last / size)) {
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

// Rounds of re-reading one group before the walk goes on without it (a warning says so). With a new
// random order on every request, a record hides from a round with a chance of a quarter at most.
const TIE_ROUNDS = 12

/**
 * Reads a group of ties that straddled a page boundary again until it shows whole (ties.ts): its
 * records the walk did not see, as a page to apply, or null when there are none.
 */
async function readTieGroup(
  ctx: SweepContext,
  order: Order,
  group: TieGroup,
  key: (record: Record<string, unknown>) => RecordId,
): Promise<RecordPage | null> {
  const { pageSize } = group
  const isTied = (record: FetchedRecord | undefined) =>
    record !== undefined && Date.parse(record.updated_at ?? '') === group.time
  // Records the walk had not seen, and the ids each round of reading again showed.
  const found = new Map<RecordId, FetchedRecord>()
  const shown = new Set<RecordId>()
  const used = new Set<string>()
  const margin = Math.max(1, Math.ceil(pageSize / 4))
  // Its positions, with a neighbour on each side: a page that shows both neighbours holds it whole.
  const at = (group.startPage - 1) * pageSize + group.startIndex
  let first = Math.max(0, at - 1)
  let last = at + group.positions
  let positions = group.positions
  let fetchedAt: Date | undefined
  let requests = 0
  // The walk's own sighting counts as a round while the group keeps its size (no record of it changed,
  // which would move it out of the group and leave its id among those seen).
  const whole = () =>
    (positions === group.positions ? new Set([...group.ids, ...shown]) : shown).size >= positions
  for (let round = 0; round < TIE_ROUNDS && !whole() && !ctx.aborted(); round++) {
    const window = windowFor(first, last, pageSize)
    // Without one page that holds it: pages around it or inside it, a new page size each round, and
    // every fifth round the pages around it with its neighbours, which tell whether it moved (a group
    // of 300 in pages of 250 shows whole after 2 or 3 rounds inside it).
    const bounded = window !== null || round % 5 === 4
    const asked = window ? [window] : roundPages(first, last, at, at + positions - 1, pageSize, used, bounded)
    used.add(requestsKey(asked))
    const answers: RecordPage[] = []
    for (const request of asked) {
      answers.push(await ctx.reader.index(ctx.resource, { ...request, order }))
      requests++
    }
    fetchedAt ??= answers[0]?.fetchedAt
    const records = answers.flatMap((answer) => answer.records)
    const tied = records.filter(isTied)
    for (const record of tied) {
      const id = key(record)
      shown.add(id)
      if (!group.ids.has(id)) found.set(id, record)
    }
    const firstAsked = asked[0] as PageRequest
    const lastAsked = asked.at(-1) as PageRequest
    const covered =
      (firstAsked.page - 1) * firstAsked.perPage <= first && lastAsked.page * lastAsked.perPage > last
    // Pages inside the group show its records, not its bounds.
    if (!covered) continue
    // The group goes on beyond what was read (records changed meanwhile and moved it): read wider.
    const openAbove = (firstAsked.page - 1) * firstAsked.perPage > 0 && isTied(records[0])
    const openBelow = (answers.at(-1)?.size ?? 0) >= lastAsked.perPage && isTied(records.at(-1))
    if (openAbove) first = Math.max(0, first - margin)
    if (openBelow) last += margin
    if (openAbove || openBelow) continue
    positions = tied.length
  }
  const hidden = [...found.values()]
  const fields = {
    updatedAt: new Date(group.time).toISOString(),
    positions,
    seen: group.ids.size,
    hidden: hidden.length,
    requests,
  }
  if (!whole()) {
    ctx.logger.warn(
      fields,
      'a group of records with one updated_at did not show whole when read again; the walk goes on without the rest',
    )
  } else {
    ctx.logger.debug(
      fields,
      'a group of records with one updated_at across a page boundary, read whole again',
    )
  }
  if (hidden.length === 0 || !fetchedAt) return null
  return { page: group.startPage, size: hidden.length, records: hidden, rejected: [], fetchedAt }
}
