// The page walk of a sweep: index pages ordered `updated_at-desc` (the newest changes first), each
// applied in a transaction with the sweep's progress, so a crashed sweep resumes at its checkpoint.
//
// An incremental walk stops after a page entirely older than its watermark: in a descending order
// nothing after such a page is newer. Records that change during the walk jump to the front, past
// the walk; they are newer than this sweep's start, so the next watermark (this start minus the
// lookback) still catches them. The watermark is never the newest `updated_at` seen: offset pages
// shift while records change, and a watermark taken from them would skip what the shift hid.
//
// An append-only log (activities) never changes what it listed, so while the activity feed has written
// every entry it read since the watermark (`feedReadTo`, plan/sweep.ts), its incremental walk also
// stops at the first page whose records are all in the mirror already and within what the feed had
// read: what lies behind it was written before. An entry the log inserts behind what was read (written
// late) is the full reconciliation's to find.
//
// A group of records with one `updated_at` that straddles a page boundary may be ordered differently on
// each request, and a record of it then shows on neither page: such a group is read again until it
// shows whole (ties.ts), but where readings have shown that ties keep their order (tie-order.ts). The
// checkpoint carries the group the last page ended in, so that a resumed walk goes on counting it, and
// points back to where a group began until it has been read again.

import type { Order, RecordPage } from '../../api-client/index.ts'
import { paginate } from '../../api-client/paging.ts'
import { hasUpdatedAt, idOf, type RecordId } from '../../resources/index.ts'
import { mirroredStates } from '../../store/records.ts'
import { raiseLargestPage } from '../../store/sync-state.ts'
import type { WalkCheckpoint } from './checkpoint.ts'
import type { SweepContext } from './context.ts'
import { lookahead } from './lookahead.ts'
import { pageApplier } from './page-applier.ts'
import type { Sighting } from './tie-order.ts'
import { readTieGroups } from './tie-reads.ts'
import { closeTies, resumeTies, savedTies, type TieGroup, trackTies } from './ties.ts'

export interface WalkResult {
  /** `end`: the index was read to its last page; `stopped`: the walk reached its watermark. */
  end: 'end' | 'stopped'
  nextPage: number
  /** Records seen that are not older than the watermark (all of them without one). */
  newer: number
  /** The most items one page held. */
  largestPage: number
  /** A walk that stopped: the group of ties its last page ended in, for a walk on from `nextPage`. */
  tie?: WalkCheckpoint['tie']
}

const NEWEST_FIRST: Order = { field: 'updated_at', direction: 'desc' }

/**
 * Walks from `from.nextPage` to the end, or until a page is entirely older than `from.watermark`, or to
 * `lastPage` at most.
 *
 * Fetching and applying overlap: once a page has arrived and the walk knows it goes on (which the page
 * alone tells: its times, its size), the request for the next page is sent while this one is applied,
 * and a walk to the end sends more ahead under latency (lookahead.ts). Each page is written in a
 * transaction with its progress; the checkpoint only ever covers pages whose records are committed,
 * all of them from the first (see `pageApplier`), so a crashed sweep resumes without a gap.
 */
export async function walkPages(
  ctx: SweepContext,
  from: WalkCheckpoint,
  total: number | null,
  lastPage = Number.POSITIVE_INFINITY,
): Promise<WalkResult> {
  const { resource, reader } = ctx
  const order = hasUpdatedAt(resource) ? NEWEST_FIRST : undefined
  const watermark = from.watermark === null ? null : Date.parse(from.watermark)
  const offset = from.nextPage - 1
  // Records are told apart by their ids: numbers, or strings where ids are text (attachments' `uuid`).
  const key = (record: Record<string, unknown>) => idOf(resource, record) as RecordId
  // A walk to the end keeps as many requests in flight as the latency asks (lookahead.ts).
  const upstream = ctx.settings.verification.upstreams[resource.service]
  const sentAhead = lookahead((page) => reader.index(resource, { page, order }), upstream.requestsPerSecond)
  const pages = paginate((page) => sentAhead.fetch(page + offset), {
    // The count bounds a walk from the first page only; a resumed one is bounded by the page limit.
    total: offset === 0 ? total : null,
    maxPages: ctx.settings.maxPages,
    idOf: key,
  })
  const applier = pageApplier(ctx, ctx.settings.applyConnections ?? 1, key)
  let nextPage = from.nextPage
  let newestFirst = true
  let previous = Number.POSITIVE_INFINITY
  // Records that change during the walk jump to the front, and offset paging then shows the tail of
  // the page before again: those repeats are not out of order. Only the last page's ids are kept
  // (memory stays flat however long the walk); a shift of more than a page is taken as disorder.
  let previousIds = new Set<RecordId>()
  let newer = 0
  let largestPage = 0
  const ties = resumeTies(from.tie)
  // The records of the last two pages, in page order: what a group's reading again is compared with.
  let recent: Sighting[][] = []
  // Where ties have kept their order, such a group hid nothing: only now and then is one read again.
  const unread = (groups: TieGroup[]) => groups.filter(() => ctx.tieOrders.readsAgain(resource.name))
  /** Reads the groups that straddled a boundary without showing whole, and applies what they hid. */
  const completeGroups = async (groups: (TieGroup | null)[], checkpoint: WalkCheckpoint) => {
    if (!order) return
    for (const hidden of await readTieGroups(ctx, order, groups, key, recent.flat())) {
      await applier.apply(hidden, checkpoint, { extra: true })
    }
  }
  // The count tells where a walk from the first page ends: no request is sent ahead past it.
  const expectedLast = (size: number) =>
    total !== null && offset === 0 && size > 0 ? Math.ceil(total / size) : Number.POSITIVE_INFINITY
  let fetching: Promise<IteratorResult<RecordPage>> | null = pages.next()
  try {
    while (fetching) {
      const step: IteratorResult<RecordPage> = await fetching
      fetching = null
      if (step.done) break
      const page = step.value
      nextPage = page.page + 1
      largestPage = Math.max(largestPage, page.size)
      const times = page.records.map((record) => Date.parse(record.updated_at ?? ''))
      const unseen = page.records
        .filter((record) => !previousIds.has(key(record)))
        .map((record) => Date.parse(record.updated_at ?? ''))
      previousIds = new Set(page.records.map(key))
      recent = [
        ...recent.slice(-1),
        page.records.map((record, i) => ({ id: key(record), time: times[i] as number })),
      ]
      if (order && newestFirst && !descending(unseen, previous)) {
        // Stopping early is only safe on an ordered index; walk to the end instead.
        newestFirst = false
        ctx.logger.warn({ page: page.page }, 'index pages are not ordered by updated_at; walking every page')
      }
      previous = unseen.at(-1) ?? previous
      // Only an ordered walk has groups of ties (the others have no order to hide a record by).
      const partial = order
        ? unread(
            trackTies(
              ties,
              page.page,
              largestPage,
              page.records.map((record, i) => ({ time: times[i] as number, id: key(record) })),
            ),
          )
        : []
      newer += watermark === null ? times.length : times.filter((time) => !(time < watermark)).length
      const stop =
        page.page >= lastPage ||
        (watermark !== null &&
          newestFirst &&
          times.length > 0 &&
          (times.every((time) => time < watermark) || (await readBefore(ctx, page, from.feedReadTo))))
      // An aborted job sends no further request; the pages already fetched are still applied.
      if (!stop && !ctx.aborted()) fetching = prefetch(pages)
      if (fetching && watermark === null)
        sentAhead.ahead(page.page, Math.min(lastPage, expectedLast(largestPage)))
      // The group of ties this page ends in may go on on the next page: a resumed walk takes it up.
      // Until the groups this page closed are read again, a resumed walk starts where they began.
      const checkpoint = savedTies(ties, { ...from, nextPage }, partial)
      await applier.apply(page, checkpoint)
      await completeGroups(partial, checkpoint)
      if (partial.length > 0 && ctx.aborted()) {
        // Stopped while reading them again: the walk ends at the checkpoint that goes back to them.
        await applier.settled()
        ctx.checkStop()
      }
      if (stop) {
        await applier.settled()
        await raiseLargestPage(ctx.db, resource.name, largestPage)
        // The group this page ended in goes on with the walk that may follow from here (the count
        // differed: every page from here on).
        return {
          end: 'stopped',
          nextPage,
          newer,
          largestPage,
          tie: savedTies(ties, { ...from, nextPage }).tie,
        }
      }
      if (!fetching) {
        await applier.settled()
        ctx.checkStop()
      }
    }
    // The group the last page ended in stays in the checkpoint until it has been read again.
    const carried = savedTies(ties, { ...from, nextPage })
    const [last = null] = unread([closeTies(ties)].filter((group) => group !== null))
    await completeGroups([last], carried)
    await applier.settled()
    // Stopped while reading it again: the last page's checkpoint still carries it.
    if (last && ctx.aborted()) ctx.checkStop()
    await raiseLargestPage(ctx.db, resource.name, largestPage)
    return { end: 'end', nextPage, newer, largestPage }
  } finally {
    // Leave nothing running behind the walk: a request in flight is waited for (its cost is counted),
    // and so is every transaction.
    if (fetching) await fetching.catch(() => {})
    await sentAhead.settle()
    await applier.settled().catch(() => {})
    await pages.return(undefined).catch(() => {})
  }
}

/**
 * Whether every record of a page of an append-only log is in the mirror already, and within what the
 * feed had read and written (`feedReadTo`, the checkpoint's): then so is everything behind it.
 */
async function readBefore(
  ctx: SweepContext,
  page: RecordPage,
  feedReadTo: number | undefined,
): Promise<boolean> {
  if (!ctx.resource.appendOnly || feedReadTo === undefined) return false
  const ids = page.records.map((record) => Number(idOf(ctx.resource, record)))
  if (!ids.every((id) => id <= feedReadTo)) return false
  const mirrored = await mirroredStates(ctx.db, ctx.resource, ids)
  return ids.every((id) => mirrored.has(id))
}

/** The next page, with its failure kept for whoever awaits it (not an unhandled rejection meanwhile). */
function prefetch(pages: AsyncGenerator<RecordPage>): Promise<IteratorResult<RecordPage>> {
  const next = pages.next()
  next.catch(() => {})
  return next
}

function descending(times: number[], previous: number): boolean {
  return times.every((time, i) => time <= (i === 0 ? previous : (times[i - 1] as number)))
}
