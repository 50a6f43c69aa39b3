// One sweep: one resource in one run. Incremental: walk the newest pages down to the watermark, then
// compare the upstream count with the live rows; when they differ, the walk goes on to the last page.
// Full: walk every page. A walk that reached the last page (whatever the mode) is followed by
// reconciliation of the rows it did not see, except for an append-only log (activities): its rows are
// never deleted, and its incremental walk down to the watermark is all its verification. Afterwards the resource's state records the watermark
// (this sweep's start minus the lookback), the time of the sweep and the remote count.
//
// Failures are recorded in the run, and the sweep ends `failed` (never `succeeded`): upstream errors
// after their retries (rate limits included), records the sync cannot use, anything unexpected.
// Only an interrupted job and a database that went away are thrown: a retry resumes from the
// checkpoint. A sweep taken over by a retry of its job stops quietly.
import { randomUUID } from 'node:crypto'
import { RequestAborted, UpstreamError } from '../../api-client/index.ts'
import { type AnyResource, hasUpdatedAt, idBeforeAll } from '../../resources/index.ts'
import {
  type ClaimedSweep,
  claimSweep,
  finishSweep,
  fullSweepSucceededSinceRun,
  type SweepEnd,
  type SweepEnded,
  type SweepKey,
  SweepLeaseLost,
  yieldSweep,
} from '../../store/runs.ts'
import { countLiveRows, writeResourceState } from '../../store/sync-state.ts'
import { countDue, planSweep, readSweepFacts, type SweepPlan } from '../plan/sweep.ts'
import { type Checkpoint, parseCheckpoint } from './checkpoint.ts'
import { openSweep, type SweepContext, SweepInterrupted, SweepYielded } from './context.ts'
import type { SweepDeps } from './deps.ts'
import { readMembers } from './members.ts'
import { reconcileUnseen } from './reconcile.ts'
import { missingFromFirstPage } from './short-list.ts'
import { walkPages } from './walk.ts'

export interface SweepTask {
  runId: number
  resource: AnyResource
  /** The job's signal: aborted on shutdown or when the job's claim was lost. */
  signal: AbortSignal
}

export type SweepResult =
  /** `runEnded`: this sweep's end finished its run (store/runs/end.ts). */
  | { status: 'succeeded'; runEnded: boolean }
  | { status: 'failed'; error: string; runEnded: boolean }
  /** The sweep had finished (or does not exist): nothing to do. */
  | { status: 'skipped' }
  /** A retry of the job took the sweep over. */
  | { status: 'superseded' }
  /** An incremental sweep made way for a full sweep of its resource; it waits to run again after it. */
  | { status: 'yielded' }

interface Walked {
  /** Whether the index was read to its last page, so that unseen rows could be reconciled. */
  complete: boolean
  remoteCount: number | null
}

export async function sweepResource(deps: SweepDeps, task: SweepTask): Promise<SweepResult> {
  const key = { runId: task.runId, resource: task.resource.name, lease: randomUUID() }
  const claimed = await claimSweep(deps.db, key)
  if (!claimed) return { status: 'skipped' }
  let ctx: SweepContext | undefined
  try {
    ctx = openSweep(deps, { resource: task.resource, key, claimed, signal: task.signal })
    ctx.logger.debug({ mode: claimed.mode, resumed: claimed.checkpoint !== null }, 'sweep started')
    if (
      claimed.mode === 'incremental' &&
      (await fullSweepSucceededSinceRun(deps.db, key.resource, key.runId))
    ) {
      // It waited (or made way) for a full sweep that read every page after it was asked for.
      const { runEnded } = await finishSweep(
        deps.db,
        deps.enqueue,
        key,
        { status: 'succeeded' },
        { apiRequests: ctx.unsavedRequests() },
      )
      ctx.logger.info('incremental sweep answered by a full sweep of its resource that started after it')
      return { status: 'succeeded', runEnded }
    }
    const walked = await sweepPhases(ctx, claimed)
    const end: SweepEnd = ctx.rejected.length
      ? { status: 'failed', error: rejectedSummary(ctx) }
      : { status: 'succeeded' }
    const { runEnded } = await finish(ctx, claimed, walked, end)
    ctx.logger.info({ ...walked, status: end.status }, 'sweep finished')
    return end.status === 'succeeded'
      ? { status: 'succeeded', runEnded }
      : { status: 'failed', error: end.error, runEnded }
  } catch (error) {
    if (error instanceof SweepLeaseLost) return { status: 'superseded' }
    if (error instanceof SweepYielded) return makeWay(deps, key, ctx)
    // Stopped (its request cut off too): the job's retry resumes at the checkpoint.
    if (
      error instanceof SweepInterrupted ||
      error instanceof RequestAborted ||
      isTransientDatabaseError(error)
    )
      throw error
    const message = error instanceof Error ? error.message : String(error)
    let ended: SweepEnded
    try {
      ended = await finishSweep(
        deps.db,
        deps.enqueue,
        key,
        { status: 'failed', error: message },
        { apiRequests: ctx?.unsavedRequests() },
      )
    } catch (recording) {
      if (recording instanceof SweepLeaseLost) return { status: 'superseded' }
      throw error // not even the failure could be written: let the job's retry try again
    }
    deps.logger.warn({ err: error, resource: key.resource, runId: key.runId }, 'sweep failed')
    return { status: 'failed', error: message, runEnded: ended.runEnded }
  }
}

async function makeWay(deps: SweepDeps, key: SweepKey, ctx: SweepContext | undefined): Promise<SweepResult> {
  try {
    await yieldSweep(deps.db, deps.enqueue, key, { apiRequests: ctx?.unsavedRequests() })
  } catch (error) {
    if (error instanceof SweepLeaseLost) return { status: 'superseded' }
    throw error
  }
  ctx?.logger.info('incremental sweep made way for a full sweep of its resource; it runs again after it')
  return { status: 'yielded' }
}

/** A resumed sweep goes on from its checkpoint; any other reads what its plan says (plan/sweep.ts). */
function checkpointOf(plan: SweepPlan): Checkpoint | null {
  if (plan.read === 'everything') return { phase: 'walk', nextPage: 1, watermark: null }
  if (plan.read === 'newest') {
    const watermark = plan.watermark?.toISOString() ?? null
    const { feedReadTo } = plan
    return { phase: 'walk', nextPage: 1, watermark, ...(feedReadTo === undefined ? {} : { feedReadTo }) }
  }
  return null
}

async function sweepPhases(ctx: SweepContext, claimed: ClaimedSweep): Promise<Walked> {
  const resumed = parseCheckpoint(claimed.checkpoint)
  const plan = resumed ? null : planSweep(await readSweepFacts(ctx, claimed))
  const checkpoint = resumed ?? (plan && checkpointOf(plan))
  const onePage = plan?.onePage ?? false
  let walked: Walked = { complete: checkpoint?.phase === 'reconcile', remoteCount: null }
  if (checkpoint?.phase === 'walk') walked = await walk(ctx, claimed, checkpoint)
  else if (plan?.read === 'first-page') {
    await walkPages(ctx, { phase: 'walk', nextPage: 1, watermark: null }, null, 1)
  } else if (plan?.read === 'nothing') {
    ctx.logger.debug({ reason: plan.reason }, 'nothing to read this cycle')
    return walked
  }
  if (!walked.complete && onePage && (await missingFromFirstPage(ctx))) {
    ctx.logger.info(
      'live rows missing from the one page that holds them all: walking every page and reconciling',
    )
    walked = await walk(ctx, claimed, { phase: 'walk', nextPage: 1, watermark: null })
  }
  if (walked.complete && !ctx.resource.appendOnly) {
    const from =
      checkpoint?.phase === 'reconcile'
        ? checkpoint
        : { phase: 'reconcile' as const, afterId: idBeforeAll(ctx.resource) }
    await reconcileUnseen(ctx, from, ctx.recordsFetched())
  }
  // Groups (crm.filter_groups): then the members of those due (members.ts), every group's in a full sweep.
  if (ctx.resource.members) await readMembers(ctx, { all: claimed.mode === 'full' })
  return walked
}

async function walk(
  ctx: SweepContext,
  claimed: ClaimedSweep,
  from: Checkpoint & { phase: 'walk' },
): Promise<Walked> {
  // A walk of every page counts first (a full one, or the first incremental one): the count bounds the
  // pages it may take, and shows how far it is.
  const everything = from.watermark === null && from.nextPage === 1
  let remoteCount = everything && ctx.count ? await takeCount(ctx) : null
  let result = await walkPages(ctx, from, remoteCount)
  if (
    ctx.count &&
    remoteCount === null &&
    result.end === 'stopped' &&
    countDue(await readSweepFacts(ctx, claimed), result)
  ) {
    remoteCount = await takeCount(ctx)
  }
  if (result.end === 'stopped' && remoteCount !== null) {
    const live = await countLiveRows(ctx.db, ctx.resource)
    if (live !== remoteCount) {
      ctx.logger.info(
        { remoteCount, live },
        'count differs from the live rows: walking every page and reconciling',
      )
      result = await walkPages(
        ctx,
        { phase: 'walk', nextPage: result.nextPage, watermark: null, tie: result.tie },
        remoteCount,
      )
    }
  }
  if (result.end === 'end')
    await ctx.save(ctx.db, { checkpoint: { phase: 'reconcile', afterId: idBeforeAll(ctx.resource) } })
  return { complete: result.end === 'end', remoteCount }
}

async function takeCount(ctx: SweepContext): Promise<number | null> {
  if (!ctx.count) return null
  const remoteCount = await ctx.count()
  await ctx.save(ctx.db, { remoteCount })
  return remoteCount
}

async function finish(
  ctx: SweepContext,
  claimed: ClaimedSweep,
  walked: Walked,
  end: SweepEnd,
): Promise<SweepEnded> {
  const { startedAt } = ctx
  const counted =
    walked.remoteCount === null
      ? {}
      : { last_remote_count: walked.remoteCount, last_remote_count_at: new Date() }
  const synced =
    end.status === 'succeeded'
      ? {
          watermark: hasUpdatedAt(ctx.resource)
            ? new Date(startedAt.getTime() - ctx.settings.lookbackSeconds * 1000)
            : null,
          ...(claimed.mode === 'incremental' ? { last_incremental_sync_at: startedAt } : {}),
          // Read to the end and reconciled: as good as a full sweep, whatever was asked for. Not when
          // resumed: what was deleted from the pages read before the interruption counts as seen.
          ...(walked.complete && claimed.checkpoint === null
            ? { last_full_sync_at: startedAt, last_verified_at: new Date() }
            : {}),
        }
      : {}
  return ctx.db.transaction().execute(async (trx) => {
    const ended = await finishSweep(trx, ctx.enqueue, ctx.key, end, { apiRequests: ctx.unsavedRequests() })
    if (Object.keys({ ...counted, ...synced }).length) {
      await writeResourceState(trx, ctx.resource.name, { ...counted, ...synced })
    }
    return ended
  })
}

function rejectedSummary(ctx: SweepContext): string {
  const [first] = ctx.rejected
  return `${ctx.rejected.length} record(s) the sync cannot use, e.g. ${first?.message}`
}

const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '40001',
  '40P01',
  '53300',
])

/** Lost connections, a server shutting down, serialization failures: a retry can succeed. */
export function isTransientDatabaseError(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof UpstreamError) return false
  const code = (error as { code?: unknown }).code
  if (
    typeof code === 'string' &&
    (TRANSIENT_CODES.has(code) || code.startsWith('08') || code.startsWith('57P'))
  ) {
    return true
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
    error.message,
  )
}
