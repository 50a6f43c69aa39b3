// What the engine is doing, per resource and per queue: `crm-sync status` and `GET /admin/status`.
// Times are ISO strings and names are snake_case, since the output goes out as JSON as it is.
import type { Config } from '../config/index.ts'
import type { Db } from '../store/database.ts'
import { detailMappings, readDetailsProgress } from '../store/record-details.ts'
import {
  countInboxByStatus,
  readInboxBytes,
  readLastSweeps,
  readUnfinishedSweeps,
} from '../store/status-queries.ts'
import { countLiveRows, readResourceStates } from '../store/sync-state.ts'
import { type JobQueue, QUEUES } from '../sync/job-queue.ts'
import { mirroredResources } from '../sync/runs.ts'

export interface ResourceStatus {
  resource: string
  live_rows: number
  /** The upstream's count as of the last sweep that took it; null when never counted. */
  remote_count: number | null
  remote_count_at: string | null
  /** remote_count - live_rows; null without a remote count. */
  drift: number | null
  watermark: string | null
  last_incremental_sync_at: string | null
  last_full_sync_at: string | null
  /** The latest finished sweep of the resource. */
  last_run: {
    id: number
    mode: 'incremental' | 'full'
    status: 'succeeded' | 'failed'
    finished_at: string | null
    error: string | null
  } | null
  /** The queued or running sweep of the resource. */
  active_sweep: {
    run_id: number
    status: 'queued' | 'running'
    records: number
    pages: number
    remote_count: number | null
    started_at: string | null
    progress_at: string
  } | null
  /** Runs whose sweep of the resource waits for the active one to end, oldest first. */
  waiting_runs: number[]
}

/** The details pass over a resource's records (src/sync/details/): how far it has come. */
export interface DetailsStatus {
  resource: string
  /** The tables it fills (`crm.historic_events`, ...). */
  tables: string[]
  /** DETAILS_BUDGET_PERCENT: the most of the budget it spends; 0 when the pass is off. */
  budget_percent: number
  /** Live records of the resource. */
  records: number
  /** Records whose details are read and not due. */
  current: number
  /** Records whose details are due: never read, changed since read, read before the last full run. */
  due: { new: number; changed: number; stale: number }
  /** Of the due ones, those whose last read failed, waiting to be tried again (30 s, doubling, 1 h at most). */
  failing: number
  last_read_at: string | null
}

export interface QueueCounts {
  /** Waiting, whether due now or later (retries wait for their backoff here). */
  queued: number
  active: number
  /** Failed jobs still retained by the queue. */
  failed: number
  /** When pg-boss last counted the queue: its monitor caches the counts, refreshed every few seconds. */
  counted_at: string | null
}

export interface Status {
  generated_at: string
  resources: ResourceStatus[]
  /** By pg-boss queue name. */
  queues: Record<string, QueueCounts>
  /**
   * Webhook deliveries kept in sync.inbox, by status: `accepted` ones wait to be applied (the inbox is
   * their queue); `failed` ones could not be applied after every retry and are kept for inspection.
   */
  inbox: { accepted: number; rejected: number; processed: number; failed: number }
  /** Bytes sync.inbox takes on disk (table, large bodies, indexes), kept in check by retention. */
  inbox_bytes: number
  /** The details pass, per mirrored resource that has details (crm.people). */
  details: DetailsStatus[]
}

export interface StatusDeps {
  db: Db
  boss: JobQueue
  config: Config
}

const iso = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : new Date(value).toISOString()

/** Live rows and the last remote count of each enabled resource (also what /metrics reports as drift). */
export async function collectResourceCounts(db: Db, config: Config) {
  const resources = mirroredResources({
    reservationEnabled: config.reservation !== null,
    resources: config.resources,
  })
  const states = new Map((await readResourceStates(db)).map((state) => [state.resource, state]))
  return Promise.all(
    resources.map(async (resource) => {
      const state = states.get(resource.name)
      const liveRows = await countLiveRows(db, resource)
      const remoteCount = state?.last_remote_count ?? null
      return {
        resource: resource.name,
        liveRows,
        remoteCount,
        drift: remoteCount === null ? null : remoteCount - liveRows,
        state,
      }
    }),
  )
}

/** The details pass's progress over every mirrored resource that has details. */
export async function collectDetailsStatus(db: Db, config: Config): Promise<DetailsStatus[]> {
  const resources = mirroredResources({
    reservationEnabled: config.reservation !== null,
    resources: config.resources,
  }).filter((resource) => detailMappings(resource).length > 0)
  return Promise.all(
    resources.map(async (resource): Promise<DetailsStatus> => {
      const progress = await readDetailsProgress(db, resource)
      return {
        resource: resource.name,
        tables: detailMappings(resource).map((mapping) => mapping.child.table),
        budget_percent: Math.round(config.detailsBudgetShare * 100),
        records: progress.records,
        current: progress.current,
        due: { new: progress.new, changed: progress.changed, stale: progress.stale },
        failing: progress.failing,
        last_read_at: iso(progress.lastReadAt),
      }
    }),
  )
}

/** The pg-boss queues crm-sync works (deliveries are queued in the inbox, not in pg-boss). */
const COUNTED_QUEUES = Object.values(QUEUES)

/** Counts of every pg-boss queue crm-sync works, as pg-boss's monitor last took them. */
export async function collectQueueCounts(boss: JobQueue): Promise<Record<string, QueueCounts>> {
  const entries = await Promise.all(
    COUNTED_QUEUES.map(async ({ name }) => {
      const [stats] = await boss.getQueueStats(name)
      const counts: QueueCounts = {
        queued: stats?.queuedCount ?? 0,
        active: stats?.activeCount ?? 0,
        failed: stats?.failedCount ?? 0,
        counted_at: iso(stats?.capturedOn),
      }
      return [name, counts] as const
    }),
  )
  return Object.fromEntries(entries)
}

export async function collectStatus({ db, boss, config }: StatusDeps): Promise<Status> {
  const generatedAt = new Date()
  const counts = await collectResourceCounts(db, config)
  const names = counts.map((count) => count.resource)
  const [lastSweeps, unfinished, queues, inbox, inboxBytes, details] = await Promise.all([
    readLastSweeps(db, names),
    readUnfinishedSweeps(db),
    collectQueueCounts(boss),
    countInboxByStatus(db),
    readInboxBytes(db),
    collectDetailsStatus(db, config),
  ])
  const resources = counts.map(({ resource, liveRows, remoteCount, drift, state }): ResourceStatus => {
    const last = lastSweeps.find((sweep) => sweep.resource === resource)
    const mine = unfinished.filter((sweep) => sweep.resource === resource)
    const active = mine.find((sweep) => !sweep.waiting)
    return {
      resource,
      live_rows: liveRows,
      remote_count: remoteCount,
      remote_count_at: iso(state?.last_remote_count_at),
      drift,
      watermark: iso(state?.watermark),
      last_incremental_sync_at: iso(state?.last_incremental_sync_at),
      last_full_sync_at: iso(state?.last_full_sync_at),
      last_run: last
        ? {
            id: last.run_id,
            mode: last.mode,
            status: last.status,
            finished_at: iso(last.finished_at),
            error: last.error,
          }
        : null,
      active_sweep: active
        ? {
            run_id: active.run_id,
            status: active.status as 'queued' | 'running',
            records: active.records,
            pages: active.pages,
            remote_count: active.remote_count,
            started_at: iso(active.started_at),
            progress_at: iso(active.progress_at) as string,
          }
        : null,
      waiting_runs: mine.filter((sweep) => sweep.waiting).map((sweep) => sweep.run_id),
    }
  })
  return {
    generated_at: generatedAt.toISOString(),
    resources,
    queues,
    inbox,
    inbox_bytes: inboxBytes,
    details,
  }
}
