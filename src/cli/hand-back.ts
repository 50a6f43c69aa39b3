// Ctrl-C on `resync --wait`: the sweeps running in this process are handed back (their jobs fail and
// are retried, resuming from their checkpoints on the next worker that takes them), and the command
// says what becomes of the run: it goes on in the crm-sync running on this database, or, when none
// runs, it waits for the next `crm-sync start` (or `crm-sync resync --wait`), or `crm-sync cancel`.
// A sweep whose job has used up its retries would only be failed once a crm-sync works its dead
// letter: it is ended as failed here and now, so that no sweep is left `running` with nobody on it.
// The others are put back to `queued` (their jobs still sent) until a worker takes them again, so that
// `crm-sync status` and `crm-sync runs` do not show them running meanwhile.
// What is said of each sweep is read from the database once all that is done: the sweeps that have
// finished are named with their outcome (one running here may have finished meanwhile, its last page
// in flight), the ones still unfinished as resumed from their checkpoints or, never started, as started.
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { abandonSweep, handBackSweep, type RunView, readRuns, readSweepLeases } from '../store/runs.ts'
import { type JobQueue, QUEUES } from '../sync/job-queue.ts'
import { relayRunEnd } from '../sync/run-report.ts'
import { sweepEnqueuer } from '../sync/runs.ts'
import { reportRunEnd } from '../sync/sweep/run-end.ts'
import { type LocalSweep, type LocalSweeps, otherProcessesLive } from './local-sweep-worker.ts'

export interface HandBackDeps {
  db: Db
  boss: JobQueue
  logger: Logger
}

const list = (names: string[]) => names.join(', ')

/** Whether the job of `sweep` fails for good at its next failure (pg-boss then dead-letters it). */
async function lastAttempt(boss: JobQueue, sweep: LocalSweep): Promise<boolean> {
  const job = await boss.getJobById(QUEUES.sweep.name, sweep.jobId)
  return job !== null && job.retryCount >= job.retryLimit
}

/**
 * Stops the job queue of this process (its sweeps handed back within `graceMs`), ends as failed the
 * sweeps that cannot be retried, and returns the lines that say what becomes of run `runId`.
 */
export async function handBack(
  deps: HandBackDeps,
  runId: number,
  local: LocalSweeps | null,
  graceMs: number,
): Promise<string[]> {
  const { db, boss, logger } = deps
  const elsewhere = await otherProcessesLive(boss)
  const here = local?.running() ?? []
  const final = new Set<LocalSweep>()
  for (const sweep of here) if (await lastAttempt(boss, sweep)) final.add(sweep)
  // Read while this process still holds them: whoever takes a retry later holds them under another lease.
  const held = await readSweepLeases(
    db,
    here.filter((sweep) => !final.has(sweep)),
  )
  // The pool stays open for what follows; the caller's stop() closes it.
  await boss.stop({ graceful: true, timeout: graceMs, close: false })
  // Handlers stop at their next checkpoint once their jobs are failed: let them end before the pool does.
  await local?.settled(3 * graceMs)
  const ended: string[] = []
  for (const sweep of final) {
    const reason = 'interrupted, and its job had used up its retries'
    const abandoned = await abandonSweep(db, sweepEnqueuer(boss), sweep.runId, sweep.resource, reason)
    if (abandoned) {
      ended.push(label(runId, sweep))
      logger.warn({ runId: sweep.runId, resource: sweep.resource }, 'sweep ended as failed: no retry left')
      if (abandoned.runEnded) await reportRunEnd({ db, logger, relay: relayRunEnd(boss) }, sweep.runId)
    }
  }
  for (const key of held) await handBackSweep(db, key)
  // Read once the hand-back is done: a sweep running here may have ended meanwhile (its last page was
  // in flight), and is not handed back then.
  const runs = await readRuns(db, { ids: [...new Set([runId, ...here.map((sweep) => sweep.runId)])] })
  const sweepOf = (sweep: LocalSweep) =>
    runs.find((run) => run.id === sweep.runId)?.resources.find((row) => row.resource === sweep.resource)
  const handedBack = here.filter((sweep) => !final.has(sweep) && unfinished(sweepOf(sweep)))
  const run = runs.find((candidate) => candidate.id === runId)
  return outcome({ runId, run, ended, handedBack, elsewhere })
}

type Sweep = RunView['resources'][number]

const unfinished = (sweep: Sweep | undefined) => sweep?.status === 'queued' || sweep?.status === 'running'

const label = (runId: number, sweep: LocalSweep) =>
  sweep.runId === runId ? sweep.resource : `${sweep.resource} of run ${sweep.runId}`

/** The lines that say what becomes of run `runId` and of each of its sweeps. */
function outcome(state: {
  runId: number
  run: RunView | undefined
  /** The sweeps ended as failed here: labels (`crm.people`, `crm.deals of run 6`). */
  ended: string[]
  handedBack: LocalSweep[]
  elsewhere: boolean
}): string[] {
  const { runId, run, ended, elsewhere } = state
  const sweeps = run?.resources ?? []
  const handedBack = state.handedBack.map((sweep) => label(runId, sweep))
  const lines = [`crm-sync resync: stopped following run ${runId}`]
  if (ended.length) {
    lines.push(`${list(ended)} had been interrupted too often (its job used up its retries): ended as failed`)
  }
  const left = sweeps.filter(unfinished)
  if (left.length === 0 && handedBack.length === 0) {
    lines.push(`run ${runId} has ${run?.status ?? 'ended'}`)
    return lines
  }
  const finished = (status: string) =>
    sweeps
      .filter((sweep) => sweep.status === status && !ended.includes(sweep.resource))
      .map((sweep) => sweep.resource)
  const outcomes = [
    ...(finished('succeeded').length ? [`${list(finished('succeeded'))} succeeded`] : []),
    ...(finished('failed').length ? [`${list(finished('failed'))} failed`] : []),
  ]
  if (outcomes.length) lines.push(`finished: ${outcomes.join('; ')}`)
  if (elsewhere) {
    const resumed = handedBack.length
      ? `; ${list(handedBack)}, interrupted here, resume${handedBack.length === 1 ? 's' : ''} there from the last checkpoint`
      : ''
    lines.push(`it goes on in the crm-sync running on this database${resumed} (crm-sync runs shows it)`)
    return lines
  }
  // Handed back here or before: resumed from a checkpoint; never started: started.
  const resumed = [
    ...new Set([
      ...left.filter((sweep) => sweep.started_at !== null).map((sweep) => sweep.resource),
      ...handedBack,
    ]),
  ]
  const fresh = left
    .filter((sweep) => sweep.started_at === null && !resumed.includes(sweep.resource))
    .map((sweep) => sweep.resource)
  const next = 'the next `crm-sync start` (or `crm-sync resync --wait`)'
  const one = (names: string[], singular: string, plural: string) => (names.length === 1 ? singular : plural)
  const waiting = resumed.length
    ? `${list(resumed)} ${one(resumed, 'waits', 'wait')} for ${next}, which resumes ` +
      one(resumed, 'it from its checkpoint', 'them from their checkpoints') +
      (fresh.length ? ` and starts ${list(fresh)}` : '')
    : `${list(fresh)} ${one(fresh, 'waits', 'wait')} for ${next}, which starts ${one(fresh, 'it', 'them')}`
  lines.push(
    `no crm-sync is running on this database, so nothing sweeps it now: ${waiting}; ` +
      `\`crm-sync cancel ${runId}\` ends the run instead`,
  )
  return lines
}
