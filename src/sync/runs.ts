// Starting a run: one sweep per resource. The job (QUEUES.sweep) of a sweep whose resource is free is
// sent in the transaction that creates the run; a sweep whose resource another sweep holds waits, and
// its job is sent in the transaction that ends the other one (store/runs.ts). So a run never exists
// without a way to its jobs, nor a job without its run.
import type { Kysely } from 'kysely'
import type { Config } from '../config/index.ts'
import { type AnyResource, findResource, resources } from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import { type CoveredResource, type CreateRunResult, createRun, type EnqueueSweep } from '../store/runs.ts'
import type { RunMode } from '../store/schema.ts'
import { type JobQueue, jobConnection, QUEUES } from './job-queue.ts'

export interface RunDeps {
  db: Db
  enqueue: EnqueueSweep
  /** Whether the reservation service is configured; its resources are off otherwise. */
  reservationEnabled: boolean
  /** The resources mirrored (MIRROR_RESOURCES); every resource of the services configured if not given. */
  resources?: readonly string[]
}

export interface StartRunRequest {
  mode: RunMode
  /** Qualified resource names; every enabled resource when not given. */
  resources?: readonly string[]
  /** Who asked: `schedule`, `startup`, `admin`, `cli`... */
  requestedBy: string
  /**
   * `queue` (default): a sweep whose resource is busy waits for it; `skip` leaves busy resources out
   * (the routine incremental schedule). See `RunRequest.whenBusy` in store/runs.ts.
   */
  whenBusy?: 'queue' | 'skip'
}

export type StartRunResult =
  /**
   * `covered`: resources left out, with the runs that already sweep them; `waiting`: resources whose
   * sweep waits for another sweep to end (the run is `queued` until they start).
   */
  | { status: 'started'; runId: number; covered: CoveredResource[]; waiting: string[] }
  /** Every resource is covered already, the first by run `runId`: follow that one. */
  | Extract<CreateRunResult, { status: 'conflict' }>

/** A resource name that is unknown, or belongs to a service that is not configured. */
export class RunRequestError extends Error {
  override name = 'RunRequestError'
}

/** The resources runs sweep: those mirrored, of the services configured. */
export function mirroredResources(deps: Pick<RunDeps, 'reservationEnabled' | 'resources'>): AnyResource[] {
  return resources.filter(
    (resource) =>
      (resource.service === 'crm' || deps.reservationEnabled) &&
      (deps.resources === undefined || deps.resources.includes(resource.name)),
  )
}

/** What runs need of the configuration. */
export function runDeps(config: Config, db: Db, enqueue: EnqueueSweep): RunDeps {
  return { db, enqueue, reservationEnabled: config.reservation !== null, resources: config.resources }
}

function chosenResources(deps: RunDeps, names: readonly string[] | undefined): string[] {
  if (!names) return mirroredResources(deps).map((resource) => resource.name)
  if (names.length === 0) throw new RunRequestError('no resources given')
  for (const name of names) {
    const resource = findResource(name)
    if (!resource) throw new RunRequestError(`unknown resource ${name}`)
    if (resource.service === 'reservation' && !deps.reservationEnabled) {
      throw new RunRequestError(`${name} is off: RESERVATION_BASE_URL and RESERVATION_API_KEY are not set`)
    }
    if (deps.resources && !deps.resources.includes(name)) {
      throw new RunRequestError(`${name} is not mirrored: MIRROR_RESOURCES leaves it out`)
    }
  }
  return [...names]
}

/**
 * Starts a run of the resources, or answers with the run that already covers every one of them.
 * Throws RunRequestError for a resource that is unknown or off.
 */
export async function startRun(deps: RunDeps, request: StartRunRequest): Promise<StartRunResult> {
  const result = await createRun(
    deps.db,
    {
      mode: request.mode,
      resources: chosenResources(deps, request.resources),
      requestedBy: request.requestedBy,
      whenBusy: request.whenBusy,
    },
    deps.enqueue,
  )
  if (result.status === 'conflict') return result
  return { status: 'started', runId: result.runId, covered: result.covered, waiting: result.waiting }
}

/** Sweep jobs through pg-boss, written with the caller's transaction, grouped by upstream service. */
export function sweepEnqueuer(boss: JobQueue): EnqueueSweep {
  return async (trx, job) => {
    const service = findResource(job.resource)?.service ?? 'crm'
    const id = await boss.send(QUEUES.sweep.name, job, {
      db: jobConnection(trx as Kysely<unknown>),
      group: { id: service },
    })
    if (id === null) throw new Error(`the job queue refused the sweep of ${job.resource} in run ${job.runId}`)
  }
}
