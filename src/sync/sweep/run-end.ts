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

/** Tells the observer about the run if this sweep's end finished it. Never throws: the sweep is done. */
export async function reportRunEnd(
  deps: { db: Db; logger: Logger; observer?: SyncObserver },
  runId: number,
  resource: string,
): Promise<void> {
  if (!deps.observer?.runFinished) return
  try {
    const run = await runEndedBy(deps.db, runId, resource)
    if (run) deps.observer.runFinished(run)
  } catch (error) {
    deps.logger.warn(
      { err: error },
      'could not read the run that a sweep ended; its duration is not reported',
    )
  }
}
