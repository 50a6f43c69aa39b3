// Runs and sweeps as their callers see them.
import type { Kysely } from 'kysely'
import type { Database, RunMode } from '../schema.ts'

export interface SweepJob {
  runId: number
  resource: string
}

/** Adds the job of one sweep inside the transaction that creates the run. */
export type EnqueueSweep = (trx: Kysely<Database>, job: SweepJob) => Promise<void>

export interface RunRequest {
  mode: RunMode
  resources: readonly string[]
  requestedBy: string
  /**
   * When a resource already has an unfinished sweep. `queue` (the default): the new sweep waits for
   * it, and the resource is left out only when an unfinished sweep already does what was asked (a full
   * one for a full request; one that has not started yet for an incremental request). `skip` (the
   * routine incremental schedule): every resource with an unfinished sweep is left out.
   */
  whenBusy?: 'queue' | 'skip'
}

/** A resource left out of a run because run `runId` already sweeps it, or will. */
export interface CoveredResource {
  resource: string
  runId: number
}

export type CreateRunResult =
  /** `covered`: resources left out; `waiting`: resources whose sweep waits for another one to end. */
  | { status: 'created'; runId: number; covered: CoveredResource[]; waiting: string[] }
  /** Every resource asked for is covered: `resource` by run `runId`, which the caller can follow. */
  | { status: 'conflict'; runId: number; resource: string }

/** The sweep of one resource in one run, as held by one attempt of its job. */
export interface SweepKey {
  runId: number
  resource: string
  lease: string
}

/** Counts are added to the sweep's; checkpoint and remote count replace theirs when given. */
export interface SweepProgress {
  records?: number
  pages?: number
  apiRequests?: number
  reconciled?: number
  tombstoned?: number
  remoteCount?: number
  checkpoint?: unknown
}

/** The attempt's lease was taken over (a retry of its job) or its sweep was abandoned: stop writing. */
export class SweepLeaseLost extends Error {
  override name = 'SweepLeaseLost'
}

export type SweepEnd = { status: 'succeeded'; error?: undefined } | { status: 'failed'; error: string }

export interface ClaimedSweep {
  mode: RunMode
  /** When the sweep first started: rows written before it and not since were not seen by it. */
  startedAt: Date
  /** Where an earlier attempt stopped, or null. */
  checkpoint: unknown
  /** Records the sweep has fetched so far, earlier attempts included. */
  records: number
}

export interface SavedProgress {
  /** A full sweep of the resource was asked for since: this incremental one makes way for it. */
  makeWay: boolean
}
