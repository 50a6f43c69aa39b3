// `resync --wait`: polls the run until it has finished, showing its progress. The sweeps are jobs for
// the workers of a running crm-sync; when there is none (no other process has the job queue open),
// or none takes the run within a grace period (all busy, or stopped), this process sweeps itself.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { type RunView, readRun } from '../store/runs.ts'
import type { JobQueue } from '../sync/job-queue.ts'
import { type LocalSweeps, otherProcessesLive, sweepHere } from './local-sweep-worker.ts'
import { readSweepWaits } from './rate-limit.ts'
import type { RunProgress } from './run-progress.ts'

const POLL_MS = 500
// A running crm-sync polls for sweep jobs every second: a sweep whose job was sent (it waits for no other
// sweep) and that is still queued after this has no taker.
const GRACE_MS = 10_000

export interface FollowDeps {
  db: Db
  boss: JobQueue
  config: Config
  logger: Logger
  /** The logger of the sweeps run in this process: their outcomes are drawn, not logged (--verbose logs them). */
  sweepLogger?: Logger
}

export interface Followed {
  run: RunView
  /** SIGINT, SIGTERM or SIGHUP (the terminal closed) stopped the following before the run ended. */
  interrupted: boolean
  /** The sweeps this process worked, when it did (see local-sweep-worker.ts). */
  local: LocalSweeps | null
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

async function current(db: Db, runId: number): Promise<RunView> {
  const run = await readRun(db, runId)
  if (!run) throw new Error(`run ${runId} does not exist`)
  return run
}

export async function followRun(deps: FollowDeps, runId: number, progress: RunProgress): Promise<Followed> {
  const stop = new AbortController()
  const interrupt = () => stop.abort()
  for (const signal of SIGNALS) process.once(signal, interrupt)
  // When each sweep was first seen with its job sent and not taken.
  const untakenSince = new Map<string, number>()
  let local: LocalSweeps | null = null
  const sweepHereBecause = async (reason: string) => {
    progress.note(`${reason}: sweeping in this process`)
    local = await sweepHere({ ...deps, logger: deps.sweepLogger ?? deps.logger })
  }
  try {
    let run = await current(deps.db, runId)
    progress.show(run)
    if (!(await otherProcessesLive(deps.boss)))
      await sweepHereBecause('no crm-sync is running on this database')
    while (run.status !== 'succeeded' && run.status !== 'failed') {
      await sleep(POLL_MS, undefined, { signal: stop.signal }).catch(() => {})
      if (stop.signal.aborted) return { run, interrupted: true, local }
      run = await current(deps.db, runId)
      progress.show(run, await readSweepWaits(deps.db, run))
      const now = Date.now()
      for (const sweep of run.resources) {
        if (sweep.status !== 'queued' || sweep.waiting) untakenSince.delete(sweep.resource)
        else if (!untakenSince.has(sweep.resource)) untakenSince.set(sweep.resource, now)
      }
      if (!local && [...untakenSince.values()].some((since) => now - since > GRACE_MS)) {
        await sweepHereBecause(`no worker took a sweep of run ${runId} within ${GRACE_MS / 1000} s`)
      }
    }
    return { run, interrupted: false, local }
  } finally {
    progress.stop()
    for (const signal of SIGNALS) process.off(signal, interrupt)
  }
}
