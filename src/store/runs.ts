// Runs (sync.runs) and their per-resource sweeps (sync.run_resources). A run's status is derived from
// its sweeps, never set by hand: queued while all its sweeps are (a sweep handed back by a process that
// stops is queued again), running until all have finished, then succeeded only when every sweep
// succeeded.
//
// Concurrency: at most one active sweep per resource (its job sent: queued for a worker, or running),
// whichever replica asks. A sweep asked for while its resource is held waits (`job_sent_at` null) and
// is started when the active one ends: full sweeps first, then in run order. Everything that starts,
// ends or requeues a sweep first takes the resource's advisory lock (several in name order), then its
// run's row, so two requests racing for a resource see each other, and two sweeps of one run ending at
// once see each other when they derive the run's status. The unique partial index is the last word.
//
// The statements live in runs/, one concern a file.

export { cancelRun } from './runs/cancel.ts'
export { createRun } from './runs/create.ts'
export { abandonSweep, finishSweep, type SweepEnded } from './runs/end.ts'
export { handBackSweep, readSweepLeases } from './runs/hand-back.ts'
export { claimSweep, saveSweepProgress, yieldSweep } from './runs/progress.ts'
export {
  fullSweepRunning,
  fullSweepRunningSince,
  fullSweepSucceededSinceRun,
  type RunFilter,
  type RunView,
  readRun,
  readRuns,
} from './runs/read.ts'
export {
  type ClaimedSweep,
  type CoveredResource,
  type CreateRunResult,
  type EnqueueSweep,
  type SweepEnd,
  /** @internal */
  type SweepJob,
  type SweepKey,
  SweepLeaseLost,
  type SweepProgress,
} from './runs/types.ts'
export { startWaitingSweeps } from './runs/waiting.ts'
