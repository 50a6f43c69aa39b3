// Reconciliation after a complete walk: the live rows the sweep did not see (store/unseen-rows.ts)
// are deleted upstream, or were missed because pages shifted under the walk. Only the upstream can
// tell which: each is checked with `show` (four at a time), tombstoned on 404 and written again when
// found. A resource without a show route (users, attachments) has no webhooks either: its unseen rows
// are deleted.
// The dependants of a record found gone (its tasks, its bookings) are checked at once.
import { type FetchedRecord, RejectedRecordError } from '../../api-client/index.ts'
import { idBeforeAll, type RecordId } from '../../resources/index.ts'
import { tombstone, upsertRecords } from '../../store/records.ts'
import { listUnseenLiveIds } from '../../store/unseen-rows.ts'
import { checkDependants } from '../refresh/dependant-checks.ts'
import type { ReconcileCheckpoint } from './checkpoint.ts'
import type { SweepContext } from './context.ts'

/** Shows in flight at once per sweep: 4 spend 5 requests a second at up to 800 ms each. */
const SHOWS_IN_FLIGHT = 4

/** Settles every unseen live row after `from.afterId`; `seenRecords` is what the walk fetched in all. */
export async function reconcileUnseen(
  ctx: SweepContext,
  from: ReconcileCheckpoint,
  seenRecords: number,
): Promise<void> {
  // A checkpoint holds ids of the resource's type (a number, or a string where ids are text).
  let afterId =
    typeof from.afterId === typeof idBeforeAll(ctx.resource) ? from.afterId : idBeforeAll(ctx.resource)
  for (;;) {
    ctx.checkStop()
    const ids = await listUnseenLiveIds(
      ctx.db,
      ctx.resource,
      ctx.startedAt,
      afterId,
      ctx.settings.reconcileBatchSize,
    )
    if (ids.length === 0) return
    afterId = ids.at(-1) as RecordId
    const checkpoint = { phase: 'reconcile' as const, afterId }
    if (!ctx.resource.routes.show) await settleByAbsence(ctx, ids, checkpoint, seenRecords)
    else if (ids.every((id): id is number => typeof id === 'number')) await settleByShow(ctx, ids, checkpoint)
    else throw new Error(`${ctx.resource.name}: show takes numeric ids, and these are text`)
  }
}

async function settleByShow(ctx: SweepContext, ids: number[], checkpoint: ReconcileCheckpoint) {
  const found: FetchedRecord[] = []
  const gone: number[] = []
  // A found record cannot undo a tombstone written after its request: the earliest request is the
  // safe time for the batch. A 404 proves the record gone as of its request: the latest one stands.
  let foundAt: Date | null = null
  let goneAt: Date | null = null
  let next = 0
  let failure: { error: unknown } | undefined
  const shows = async () => {
    while (!failure && next < ids.length) {
      const id = ids[next++] as number
      try {
        ctx.checkAbort()
        const answer = await ctx.reader.show(ctx.resource, id)
        if (answer.status === 'found') {
          found.push(answer.record)
          if (!foundAt || answer.fetchedAt < foundAt) foundAt = answer.fetchedAt
        } else {
          gone.push(id)
          if (!goneAt || answer.fetchedAt > goneAt) goneAt = answer.fetchedAt
        }
      } catch (error) {
        // The record exists but cannot be used: keep the row, and let the sweep end failed.
        if (error instanceof RejectedRecordError) ctx.rejected.push(error)
        else failure ??= { error }
      }
    }
  }
  // Every unseen row needs its show: several in flight spend the budget under latency, and wait for it
  // otherwise. A failure sends no further show; those in flight end first.
  await Promise.all(Array.from({ length: Math.min(SHOWS_IN_FLIGHT, ids.length) }, shows))
  if (failure) throw failure.error
  const tombstoned = await ctx.db.transaction().execute(async (trx) => {
    if (foundAt) await upsertRecords(trx, ctx.resource, found, { source: 'fetch', fetchedAt: foundAt })
    const tombstoned = goneAt ? await tombstone(trx, ctx.resource, gone, goneAt) : []
    await checkDependants(trx, ctx.queueChecks, ctx.resource, tombstoned)
    await ctx.save(trx, { reconciled: ids.length, tombstoned: tombstoned.length, checkpoint })
    return tombstoned.length
  })
  ctx.applied('fetch', found.length)
  ctx.applied('tombstone', tombstoned)
}

async function settleByAbsence(
  ctx: SweepContext,
  ids: RecordId[],
  checkpoint: ReconcileCheckpoint,
  seenRecords: number,
) {
  // An index that lists nothing while the mirror has rows is more likely a fault than an empty account.
  if (seenRecords === 0) {
    throw new Error(`the index listed no ${ctx.resource.path}; refusing to tombstone every mirrored one`)
  }
  const tombstoned = await ctx.db.transaction().execute(async (trx) => {
    const tombstoned = await tombstone(trx, ctx.resource, ids, new Date())
    await ctx.save(trx, { tombstoned: tombstoned.length, checkpoint })
    return tombstoned.length
  })
  ctx.applied('tombstone', tombstoned)
}
