// Reporting a run that has ended. The transaction that ends a run's last sweep derives the run's status
// and says so (store/runs/end.ts `SweepEnded`): exactly one end of a sweep finishes a run, and only the
// process that made it reports the run (its line, its duration in /metrics).
import type { Logger } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import { type RunView, readRun } from '../../store/runs.ts'
import type { SyncObserver } from '../observer.ts'

/** The line a finished run is logged with: what it did, what it cost, how long it took. */
function runSummary(run: RunView) {
  const start = run.started_at ?? run.created_at
  const sum = (field: 'records' | 'api_requests' | 'tombstoned') =>
    run.resources.reduce((total, sweep) => total + (sweep[field] ?? 0), 0)
  return {
    runId: run.id,
    mode: run.mode,
    status: run.status,
    seconds: run.finished_at ? Math.max(0, (run.finished_at.getTime() - start.getTime()) / 1000) : null,
    resources: run.resources.length,
    records: sum('records'),
    requests: sum('api_requests'),
    tombstoned: sum('tombstoned'),
    ...(run.status === 'failed' ? { error: run.error } : {}),
  }
}

/** Hands the end of a run on to the service, from a process that is not one (sync/run-report.ts). */
export type RelayRunEnd = (runId: number) => Promise<void>

/**
 * Logs the run ("run finished", with its records, requests and duration) and tells the observer: for
 * the one end of a sweep that finished it. A command (`relay`) hands it on to the service as well.
 * Never throws: the sweep is done.
 */
export async function reportRunEnd(
  deps: { db: Db; logger: Logger; observer?: SyncObserver; relay?: RelayRunEnd },
  runId: number,
  fields: { endedBy?: string } = {},
): Promise<void> {
  try {
    const run = await readRun(deps.db, runId)
    if (!run?.finished_at) return
    const summary = { ...runSummary(run), ...fields }
    if (run.status === 'failed') deps.logger.warn(summary, 'run finished')
    else deps.logger.info(summary, 'run finished')
    deps.observer?.runFinished?.(run)
    await deps.relay?.(runId)
  } catch (error) {
    deps.logger.warn({ err: error }, 'could not report the end of a run; it is not reported')
  }
}
