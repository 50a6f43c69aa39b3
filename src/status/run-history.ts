// The runs as the admin API and the command line show them (`GET /admin/runs`, `crm-sync runs`), and a
// run cancelled by hand (`POST /admin/runs/:id/cancel`, `crm-sync cancel`).
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import {
  cancelRun as cancelStoredRun,
  type EnqueueSweep,
  type RunFilter,
  type RunView,
  readRun,
  readRuns,
} from '../store/runs.ts'
import { type RelayRunEnd, reportRunEnd } from '../sync/sweep/run-end.ts'

export const DEFAULT_RUN_PAGE = 20
export const MAX_RUN_PAGE = 100

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString())

/** A run as `GET /admin/runs/:id` shows it: times in ISO 8601, one entry per sweep. */
export function runJson(run: RunView) {
  return {
    id: run.id,
    mode: run.mode,
    status: run.status,
    requested_by: run.requested_by,
    created_at: iso(run.created_at),
    started_at: iso(run.started_at),
    finished_at: iso(run.finished_at),
    error: run.error,
    resources: run.resources.map((sweep) => ({
      resource: sweep.resource,
      status: sweep.status,
      waiting: sweep.waiting,
      records: sweep.records,
      remote_count: sweep.remote_count,
      pages: sweep.pages,
      api_requests: sweep.api_requests,
      reconciled: sweep.reconciled,
      tombstoned: sweep.tombstoned,
      started_at: iso(sweep.started_at),
      finished_at: iso(sweep.finished_at),
      error: sweep.error,
    })),
  }
}

export interface RunPage {
  runs: RunView[]
  /** The `before` of the next page (the oldest run of this one), or null when this is the last. */
  nextBefore: number | null
}

/** One page of runs, newest first: `limit` of them (default 20, at most 100) that pass the filter. */
export async function listRuns(db: Db, filter: Omit<RunFilter, 'ids'> = {}): Promise<RunPage> {
  const limit = Math.min(filter.limit ?? DEFAULT_RUN_PAGE, MAX_RUN_PAGE)
  const runs = await readRuns(db, { ...filter, limit: limit + 1 })
  const page = runs.slice(0, limit)
  return { runs: page, nextBefore: runs.length > limit ? (page.at(-1)?.id ?? null) : null }
}

/** The body of `GET /admin/runs` and of `crm-sync runs --json`. */
export function runPageJson(page: RunPage) {
  return { runs: page.runs.map(runJson), next_before: page.nextBefore }
}

export type CancelResult =
  | { status: 'cancelled'; run: RunView; resources: string[] }
  | { status: 'finished'; run: RunView }
  | { status: 'unknown' }

/**
 * Ends every unfinished sweep of the run as failed with `cancelled by <by>` (store/runs/cancel.ts) and
 * answers with the run as it then is. With a logger, the cancellation and the run's end ("run
 * finished") are logged, as the end of a sweep logs them; a command hands the end on (`relay`).
 */
export async function cancelRun(
  deps: { db: Db; enqueue: EnqueueSweep; logger?: Logger; relay?: RelayRunEnd },
  runId: number,
  by: string,
): Promise<CancelResult> {
  const result = await cancelStoredRun(deps.db, deps.enqueue, runId, by)
  if (result.status === 'unknown') return result
  const run = await readRun(deps.db, runId)
  if (!run) return { status: 'unknown' } // deleted since (retention)
  if (result.status === 'finished') return { status: 'finished', run }
  const { logger } = deps
  if (logger) {
    logger.info({ runId, resources: result.resources, by }, 'run cancelled')
    // Cancelling ends every unfinished sweep: the last of them ended the run.
    await reportRunEnd({ db: deps.db, logger }, runId)
  }
  // A command's cancellation reaches the service's log too (sync/run-report.ts); the run is cancelled
  // whether or not that hand-over works.
  await deps.relay?.(runId).catch(() => {})
  return { status: 'cancelled', run, resources: result.resources }
}
