// The page walk of a sweep: index pages ordered `updated_at-desc` (the newest changes first), each
// applied in a transaction with the sweep's progress, so a crashed sweep resumes at its checkpoint.
//
// An incremental walk stops after a page entirely older than its watermark: in a descending order
// nothing after such a page is newer. Records that change during the walk jump to the front, past
// the walk; they are newer than this sweep's start, so the next watermark (this start minus the
// lookback) still catches them. The watermark is never the newest `updated_at` seen: offset pages
// shift while records change, and a watermark taken from them would skip what the shift hid.
//
// An append-only log (activities) never changes what it listed, so its incremental walk also stops at
// the first page whose records are all in the mirror already: what lies behind it was read before.
// Without this, each walk of a busy log read back the whole lookback (a page of 250 every 5 s of
// activity). An entry the log inserts behind what was read (an older time, written late) is the full
// reconciliation's to find, as for the watermark.
//
// A group of records with one `updated_at` that straddles a page boundary may be ordered differently on
// each request, and a record of it then shows on neither page: such a group is read again until it
// shows whole (ties.ts). The checkpoint carries the group the last page ended in, so that a resumed
// walk goes on counting it.

import type { Order, RecordPage } from '../../api-client/index.ts'
import { paginate } from '../../api-client/paging.ts'
import { hasUpdatedAt, idOf, type RecordId } from '../../resources/index.ts'
import { mirroredStates } from '../../store/activity-feed.ts'
import { upsertRecords } from '../../store/records.ts'
import { raiseLargestPage } from '../../store/sync-state.ts'
import type { SweepContext, WalkCheckpoint } from './context.ts'
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
 * alone tells: its times, its size), the request for the next page is sent while this one is applied.
 * No request is sent that the walk one page at a time would not send. Each page is written in a
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
  const pages = paginate((page) => reader.index(resource, { page: page + offset, order }), {
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
  /** Reads the groups that straddled a boundary without showing whole, and applies what they hid. */
  const completeGroups = async (groups: (TieGroup | null)[], checkpoint: WalkCheckpoint) => {
    if (!order) return
    for (const hidden of await readTieGroups(ctx, order, groups, key)) {
      await applier.apply(hidden, checkpoint, { extra: true })
    }
  }
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
      if (order && newestFirst && !descending(unseen, previous)) {
        // Stopping early is only safe on an ordered index; walk to the end instead.
        newestFirst = false
        ctx.logger.warn({ page: page.page }, 'index pages are not ordered by updated_at; walking every page')
      }
      previous = unseen.at(-1) ?? previous
      // Only an ordered walk has groups of ties (the others have no order to hide a record by).
      const partial = order
        ? trackTies(
            ties,
            page.page,
            largestPage,
            page.records.map((record, i) => ({ time: times[i] as number, id: key(record) })),
          )
        : []
      newer += watermark === null ? times.length : times.filter((time) => !(time < watermark)).length
      const stop =
        page.page >= lastPage ||
        (watermark !== null &&
          newestFirst &&
          times.length > 0 &&
          (times.every((time) => time < watermark) || (await readBefore(ctx, page))))
      // An aborted job sends no further request; the pages already fetched are still applied.
      if (!stop && !ctx.aborted()) fetching = prefetch(pages)
      // The group of ties this page ends in may go on on the next page: a resumed walk takes it up.
      const checkpoint = savedTies(ties, { ...from, nextPage })
      await applier.apply(page, checkpoint)
      await completeGroups(partial, checkpoint)
      if (stop) {
        await applier.settled()
        await raiseLargestPage(ctx.db, resource.name, largestPage)
        // The group this page ended in goes on with the walk that may follow from here (the count
        // differed: every page from here on).
        return { end: 'stopped', nextPage, newer, largestPage, tie: checkpoint.tie }
      }
      if (!fetching) {
        await applier.settled()
        ctx.checkStop()
      }
    }
    await completeGroups([closeTies(ties)], { ...from, nextPage, tie: undefined })
    await applier.settled()
    await raiseLargestPage(ctx.db, resource.name, largestPage)
    return { end: 'end', nextPage, newer, largestPage }
  } finally {
    // Leave nothing running behind the walk: a request in flight is waited for (its cost is counted),
    // and so is every transaction.
    if (fetching) await fetching.catch(() => {})
    await applier.settled().catch(() => {})
    await pages.return(undefined).catch(() => {})
  }
}

/** Whether every record of a page of an append-only log is in the mirror already. */
async function readBefore(ctx: SweepContext, page: RecordPage): Promise<boolean> {
  if (!ctx.resource.appendOnly) return false
  const ids = page.records.map((record) => Number(idOf(ctx.resource, record)))
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

interface PageApplier {
  /** Resolves once the next page may be given: this one applied, or being applied on a connection. */
  apply(page: RecordPage, checkpoint: WalkCheckpoint, options?: { extra?: boolean }): Promise<void>
  /**
   * Resolves when every page given has committed and the checkpoint covers the last of them; rejects
   * with the first failure (the checkpoint then covers no page after the one that failed).
   */
  settled(): Promise<void>
}

interface Pending {
  checkpoint: WalkCheckpoint
  ids: Set<RecordId>
  committed: boolean
  done: Promise<void>
}

/**
 * Applies pages, each in a transaction with its progress. With one connection a page commits before
 * the next one starts. With more, a page is written while the pages before it are still being written,
 * when it shares no record with them: a record on two pages is written in page order, and two
 * statements replacing one parent's children at once would keep both sets.
 *
 * Transactions never wait for each other in JavaScript (a wait PostgreSQL cannot see could close a
 * deadlock it would not detect); they may commit out of order. A transaction writes the checkpoint
 * only when every page before its own has committed, and then covers the committed pages after it as
 * well. A page that commits before an earlier one is covered by a later checkpoint (the earlier page's,
 * or the next one's, or the one `settled` writes): a crash in between fetches it again, never skips.
 */
function pageApplier(
  ctx: SweepContext,
  connections: number,
  key: (record: Record<string, unknown>) => RecordId,
): PageApplier {
  // Pages given and not yet covered by a committed checkpoint, in page order.
  const pending: Pending[] = []
  // Pages given at most from the first one not covered: bounds what a crash makes fetch again.
  const window = 2 * connections
  let saving: Promise<unknown> = Promise.resolve()
  const failures: unknown[] = []
  const check = () => {
    if (failures.length) throw failures[0]
  }

  /** The furthest committed page `entry`'s commit would make the checkpoint cover, if any. */
  function coverage(entry: Pending): Pending | undefined {
    const index = pending.indexOf(entry)
    if (pending.slice(0, index).some((other) => !other.committed)) return undefined
    let last = entry
    for (const other of pending.slice(index + 1)) {
      if (!other.committed) break
      last = other
    }
    return last
  }

  /** Runs `ctx.save` after the saves before it: each adds the requests spent since the last one. */
  function save(work: () => Promise<void>): Promise<void> {
    const saved = saving.then(work)
    saving = saved.catch(() => {})
    return saved
  }

  async function write(entry: Pending, page: RecordPage, extra: boolean): Promise<void> {
    let covered: Pending | undefined
    await ctx.db.transaction().execute(async (trx) => {
      await upsertRecords(trx, ctx.resource, page.records, { source: 'fetch', fetchedAt: page.fetchedAt })
      await save(() => {
        // Decided from the commits known when the save runs.
        covered = coverage(entry)
        const progress = { records: page.records.length, pages: extra ? 0 : 1 }
        return ctx.save(trx, covered ? { ...progress, checkpoint: covered.checkpoint } : progress)
      })
    })
    entry.committed = true
    if (covered) pending.splice(0, pending.indexOf(covered) + 1)
    ctx.applied('fetch', page.records.length)
  }

  return {
    async apply(page, checkpoint, options = {}) {
      check()
      ctx.rejected.push(...page.rejected)
      // Wait for a free connection, for the pages that share a record with this one, and for the
      // checkpoint to catch up when the window is full.
      for (;;) {
        const running = pending.filter((entry) => !entry.committed)
        const waits =
          running.length >= connections
            ? running // the first to finish frees a connection
            : pending.length >= window
              ? running.slice(0, 1) // the first one not committed holds the checkpoint back
              : running.filter((other) => page.records.some((record) => other.ids.has(key(record))))
        if (waits.length === 0) break
        await Promise.race(waits.map((entry) => entry.done.catch(() => {})))
        check()
      }
      const entry: Pending = {
        checkpoint,
        ids: new Set(page.records.map(key)),
        committed: false,
        done: Promise.resolve(),
      }
      pending.push(entry)
      entry.done = write(entry, page, options.extra === true).catch((error: unknown) => {
        failures.push(error)
        throw error
      })
      entry.done.catch(() => {})
      if (connections === 1) await entry.done
    },
    async settled() {
      for (const entry of [...pending]) await entry.done.catch(() => {})
      check()
      const last = pending.at(-1)
      // Every page committed; the last ones committed before an earlier one and are not covered yet.
      if (last) {
        await save(() => ctx.save(ctx.db, { checkpoint: last.checkpoint }))
        pending.length = 0
      }
    },
  }
}
