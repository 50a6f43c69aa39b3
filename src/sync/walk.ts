// The page walk of a sweep: index pages ordered `updated_at-desc` (the newest changes first), each
// applied with its checkpoint in one transaction, so a crashed sweep resumes at the next page.
//
// An incremental walk stops after a page entirely older than its watermark: in a descending order
// nothing after such a page is newer. Records that change during the walk jump to the front, past
// the walk; they are newer than this sweep's start, so the next watermark (this start minus the
// lookback) still catches them. The watermark is never the newest `updated_at` seen: offset pages
// shift while records change, and a watermark taken from them would skip what the shift hid.

import type { Order, RecordPage } from '../api-client/index.ts'
import { paginate } from '../api-client/paging.ts'
import { hasUpdatedAt } from '../resources/index.ts'
import { upsertRecords } from '../store/records.ts'
import type { SweepContext, WalkCheckpoint } from './sweep-context.ts'

export interface WalkResult {
  /** `end`: the index was read to its last page; `stopped`: the walk reached its watermark. */
  end: 'end' | 'stopped'
  nextPage: number
}

const NEWEST_FIRST: Order = { field: 'updated_at', direction: 'desc' }

/** Walks from `from.nextPage` to the end, or until a page is entirely older than `from.watermark`. */
export async function walkPages(
  ctx: SweepContext,
  from: WalkCheckpoint,
  total: number | null,
): Promise<WalkResult> {
  const { resource, reader } = ctx
  const order = hasUpdatedAt(resource) ? NEWEST_FIRST : undefined
  const watermark = from.watermark === null ? null : Date.parse(from.watermark)
  const offset = from.nextPage - 1
  const pages = paginate((page) => reader.index(resource, { page: page + offset, order }), {
    // The count bounds a walk from the first page only; a resumed one is bounded by the page limit.
    total: offset === 0 ? total : null,
    maxPages: ctx.settings.maxPages,
  })
  let nextPage = from.nextPage
  let newestFirst = true
  let previous = Number.POSITIVE_INFINITY
  for await (const page of pages) {
    nextPage = page.page + 1
    await applyPage(ctx, page, { ...from, nextPage })
    const times = page.records.map((record) => Date.parse(record.updated_at ?? ''))
    if (order && newestFirst && !descending(times, previous)) {
      // Stopping early is only safe on an ordered index; walk to the end instead.
      newestFirst = false
      ctx.logger.warn({ page: page.page }, 'index pages are not ordered by updated_at; walking every page')
    }
    previous = times.at(-1) ?? previous
    if (watermark !== null && newestFirst && times.length > 0 && times.every((time) => time < watermark)) {
      return { end: 'stopped', nextPage }
    }
    ctx.checkAbort()
  }
  return { end: 'end', nextPage }
}

function descending(times: number[], previous: number): boolean {
  return times.every((time, i) => time <= (i === 0 ? previous : (times[i - 1] as number)))
}

async function applyPage(ctx: SweepContext, page: RecordPage, checkpoint: WalkCheckpoint): Promise<void> {
  ctx.rejected.push(...page.rejected)
  await ctx.db.transaction().execute(async (trx) => {
    await upsertRecords(trx, ctx.resource, page.records, { source: 'fetch', fetchedAt: page.fetchedAt })
    await ctx.save(trx, { records: page.records.length, pages: 1, checkpoint })
  })
  ctx.applied('fetch', page.records.length)
}
