// Asking the engine under test for a run from outside it, as `crm-sync resync` does, and waiting for
// the run to end.
import { createLogger } from '../../src/log.ts'
import type { Db } from '../../src/store/database.ts'
import { type RunView, readRun } from '../../src/store/runs.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { startRun, sweepEnqueuer } from '../../src/sync/runs.ts'
import { waitFor } from './process.ts'

/** Asks for a run and waits for it to end. */
export async function requestRun(
  db: Db,
  url: string,
  request: { mode: 'incremental' | 'full'; resources?: string[] },
  timeoutMs: number,
): Promise<RunView> {
  const boss = await startJobQueue(url, createLogger({ level: 'silent' }))
  const started = await startRun(
    { db, enqueue: sweepEnqueuer(boss), reservationEnabled: true },
    { ...request, requestedBy: 'test' },
  ).finally(() => boss.stop({ graceful: false }))
  if (started.status !== 'started') throw new Error(`run refused: ${JSON.stringify(started)}`)
  return runEnded(db, started.runId, timeoutMs)
}

/** Waits for run `runId` to end. */
export function runEnded(db: Db, runId: number, timeoutMs: number): Promise<RunView> {
  return waitFor(
    async () => {
      const run = await readRun(db, runId)
      return run?.finished_at ? run : undefined
    },
    timeoutMs,
    `run ${runId} to end`,
  )
}
