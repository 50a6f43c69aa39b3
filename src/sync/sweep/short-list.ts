// A list verified by complete walks (no count route: reservation tags and webforms, users, the notes
// or tasks of a small account) whose live rows are no more than one index page of it has held is shown
// whole by its first page, which an incremental sweep reads anyway (or reads for this alone, where the
// list has no `updated_at`). A live row missing from that page was deleted, or moved: a complete walk
// and its reconciliation follow at once, so that a deletion arrives within the interval rather than at
// the next scheduled verification. The walk, not the first page, decides what is gone. Whether a list
// fits on one page is the plan's to say (plan/sweep.ts).
import { idBeforeAll } from '../../resources/index.ts'
import { listUnseenLiveIds } from '../../store/unseen-rows.ts'
import type { SweepContext } from './context.ts'

/** After the first page: whether a live row was not on it. */
export async function missingFromFirstPage(ctx: SweepContext): Promise<boolean> {
  const [missing] = await listUnseenLiveIds(ctx.db, ctx.resource, ctx.startedAt, idBeforeAll(ctx.resource), 1)
  return missing !== undefined
}
