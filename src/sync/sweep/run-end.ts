// Which sweep ended a run. A sweep's end locks its run's row and derives the run's status in the same
// transaction, so exactly one sweep's end finishes a run, and it stamps the run's `finished_at` with
// its own transaction time (`now()`), the same as its own. That lets one process, and only one,
// report the run (e.g. its duration) without a second write.
import type { Logger } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import { type RunView, readRun } from '../../store/runs.ts'
import type { SyncObserver } from '../observer.ts'

/** The run, when the end of its sweep of `resource` is what finished it; otherwise undefined. */
export async function runEndedBy(db: Db, runId: number, resource: string): Promise<RunView | undefined> {
  const run = await readRun(db, runId)
  if (!run?.finished_at) return undefined
  const sweep = run.resources.find((candidate) => candidate.resource === resource)
  return sweep?.finished_at?.getTime() === run.finished_at.getTime() ? run : undefined
}

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

/**
 * Logs the run ("run finished", with its records, requests and duration) and tells the observer, if
 * this sweep's end finished it. Never throws: the sweep is done.
 */
export async function reportRunEnd(
  deps: { db: Db; logger: Logger; observer?: SyncObserver },
  runId: number,
  resource: string,
): Promise<void> {
  try {
    const run = await runEndedBy(deps.db, runId, resource)
    if (!run) return
    const summary = runSummary(run)
    if (run.status === 'failed') deps.logger.warn(summary, 'run finished')
    else deps.logger.info(summary, 'run finished')
    deps.observer?.runFinished?.(run)
  } catch (error) {
    deps.logger.warn({ err: error }, 'could not read the run that a sweep ended; it is not reported')
  }
}
