// A list verified by complete walks (no count route: reservation tags and webforms, users, the notes
// or tasks of a small account) whose live rows are no more than one index page of it has held is shown
// whole by its first page, which an incremental sweep reads anyway (or reads for this alone, where the
// list has no `updated_at`). A live row missing from that page was deleted, or moved: a complete walk
// and its reconciliation follow at once, so that a deletion arrives within the interval rather than at
// the next scheduled verification. The walk, not the first page, decides what is gone.
import { idBeforeAll } from '../../resources/index.ts'
import type { ClaimedSweep } from '../../store/runs.ts'
import { countLiveRows, readResourceState } from '../../store/sync-state.ts'
import { listUnseenLiveIds } from '../../store/unseen-rows.ts'
import type { SweepContext } from './context.ts'
import { verifiedByWalk } from './start.ts'

/** Whether this fresh incremental sweep of a walk-verified resource finds its live rows on one page. */
export async function fitsOnOnePage(ctx: SweepContext, claimed: ClaimedSweep): Promise<boolean> {
  if (claimed.mode !== 'incremental' || claimed.checkpoint !== null || !verifiedByWalk(ctx.resource)) {
    return false
  }
  const largest = (await readResourceState(ctx.db, ctx.resource.name))?.largest_page ?? 0
  const live = await countLiveRows(ctx.db, ctx.resource)
  return live > 0 && live <= largest
}

/** After the first page: whether a live row was not on it. */
export async function missingFromFirstPage(ctx: SweepContext): Promise<boolean> {
  const [missing] = await listUnseenLiveIds(ctx.db, ctx.resource, ctx.startedAt, idBeforeAll(ctx.resource), 1)
  return missing !== undefined
}
