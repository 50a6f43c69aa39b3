// A sweep's state, named. `sync.run_resources.state` is derived by PostgreSQL from the columns that
// hold it (migration 0021): `status`, whether its job was sent (`job_sent_at`) and whether it ever
// started (`started_at`).
//
// | state | what it is | columns |
// |---|---|---|
// | waiting | asked for while another sweep holds its resource; no job yet | queued, no job |
// | sent | its job sent, no worker has taken it yet | queued, job, never started |
// | running | an attempt of its job holds it (`lease`) | running |
// | handed_back | a process that stopped gave it back; the next worker resumes it | queued, job, started |
// | succeeded, failed | ended | |
//
// The transitions below are the only ones: each statement that moves a sweep names its transition and
// touches only sweeps in one of its `from` states. One sweep per resource holds a job (sent, running
// or handed back): a unique index says so.
import type { Generated } from 'kysely'

export type SweepState = 'waiting' | 'sent' | 'running' | 'handed_back' | 'succeeded' | 'failed'

/** The column as Kysely sees it: PostgreSQL computes it. */
export type SweepStateColumn = Generated<SweepState>

/** The states of a sweep that holds its resource: its job is out. */
export const HOLDS_RESOURCE = ['sent', 'running', 'handed_back'] as const satisfies readonly SweepState[]

/** The states of a sweep that has not ended. */
export const UNFINISHED_STATES = ['waiting', ...HOLDS_RESOURCE] as const satisfies readonly SweepState[]

/** The states of a sweep that has started reading and not ended: it resumes where it stopped. */
export const UNDER_WAY = ['running', 'handed_back'] as const satisfies readonly SweepState[]

interface Transition {
  from: readonly SweepState[]
  to: readonly SweepState[]
}

export const TRANSITIONS = {
  /** Its resource is free: its job is sent (runs/waiting.ts, full sweeps first). */
  send: { from: ['waiting'], to: ['sent'] },
  /** A worker's attempt takes it, or takes it over from an attempt whose process died (runs/progress.ts). */
  claim: { from: HOLDS_RESOURCE, to: ['running'] },
  /** An incremental sweep makes way for a full one created meanwhile: from the start (runs/progress.ts). */
  makeWay: { from: ['running'], to: ['waiting'] },
  /** A process that stops gives it back with its checkpoint (runs/hand-back.ts). */
  handBack: { from: ['running'], to: ['handed_back'] },
  /** Its walk ended, it was cancelled, or it was given up (runs/end.ts, runs/cancel.ts). */
  end: { from: UNFINISHED_STATES, to: ['succeeded', 'failed'] },
} as const satisfies Record<string, Transition>

/**
 * Which takes precedence, decided once, where a run is created: a full sweep asked for while an
 * incremental one of its resource holds it marks that one to make way (`make_way_for`); waiting sweeps
 * are sent full ones first. An incremental request is covered by a sweep that has not started yet;
 * a full request only by a full one.
 */
export function covers(
  sweep: { mode: 'full' | 'incremental'; state: SweepState },
  request: { mode: 'full' | 'incremental'; whenBusy?: 'queue' | 'skip' },
): boolean {
  if (request.whenBusy === 'skip') return true
  if (request.mode === 'full') return sweep.mode === 'full'
  return sweep.state === 'waiting' || sweep.state === 'sent'
}
