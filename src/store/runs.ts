// Runs (sync.runs) and their per-resource sweeps (sync.run_resources). A run's status is derived from
// its sweeps, never set by hand: queued until one starts, running until all have finished, then
// succeeded only when every sweep succeeded.
//
// Concurrency: at most one queued or running sweep per resource, whichever replica asks; the unique
// partial index decides, so two requests racing for a resource cannot both win. Every change of a
// sweep's status first locks its run's row, so that two sweeps of one run finishing at once see each
// other when they derive the run's status.
import { type Kysely, sql } from 'kysely'
import type { Db } from './database.ts'
import type { Database, RunMode } from './schema.ts'

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
   * When a resource already has an unfinished sweep: `refuse` the whole run (the default: an operator
   * asked for these resources), or `skip` it and sweep the others (a schedule).
   */
  whenBusy?: 'refuse' | 'skip'
}

/** A resource left out of a run because run `runId` is sweeping it. */
export interface BusyResource {
  resource: string
  runId: number
}

export type CreateRunResult =
  | { status: 'created'; runId: number; busy: BusyResource[] }
  /** A sweep of `resource` is already queued or running, in run `runId`. */
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

class RunConflict extends Error {
  /** Undefined when the sweep in the way finished before it could be named: try again. */
  readonly holder: BusyResource | undefined
  constructor(holder: BusyResource | undefined) {
    super('a resource already has an unfinished sweep')
    this.holder = holder
  }
}

const UNFINISHED = ['queued', 'running'] as const
// A sweep writes progress after every page and every reconciled batch; one that has been silent for
// this long lost its job (dead-lettered, expired) and would otherwise block its resource forever.
export const DEFAULT_STALE_AFTER_SECONDS = 2 * 3600

function inTransaction<T>(db: Kysely<Database>, work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work)
}

/**
 * Creates a run with one queued sweep per resource and enqueues their jobs, all in one transaction.
 * Refuses (without throwing) when a resource already has a queued or running sweep, or with
 * `whenBusy: 'skip'` leaves such resources out (and refuses only when every one is busy).
 */
export async function createRun(
  db: Db,
  request: RunRequest,
  enqueue: EnqueueSweep,
  options: { staleAfterSeconds?: number } = {},
): Promise<CreateRunResult> {
  const resources = [...new Set(request.resources)].sort()
  if (resources.length === 0) throw new Error('a run needs at least one resource')
  // A conflicting sweep may finish between the refusal and the look-up of its run: then try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(async (trx) => {
        await abandonStaleSweeps(trx, resources, options.staleAfterSeconds ?? DEFAULT_STALE_AFTER_SECONDS)
        const { id: runId } = await trx
          .insertInto('sync.runs')
          .values({ mode: request.mode, status: 'queued', requested_by: request.requestedBy })
          .returning('id')
          .executeTakeFirstOrThrow()
        // A concurrent insert of the same resource makes this one wait for its commit, then skip.
        const inserted = await sql<{ resource: string }>`
          insert into sync.run_resources (run_id, resource, status)
          select ${runId}, unnest(${resources}::text[]), 'queued'
          on conflict (resource) where status in ('queued', 'running') do nothing
          returning resource
        `.execute(trx)
        const free = inserted.rows.map((row) => row.resource).sort()
        const busy = await busyResources(
          trx,
          resources.filter((resource) => !free.includes(resource)),
        )
        if (free.length + busy.length < resources.length) throw new RunConflict(undefined)
        if (busy.length > 0 && (request.whenBusy !== 'skip' || free.length === 0)) {
          throw new RunConflict(busy[0]) // rolls the run back
        }
        for (const resource of free) await enqueue(trx, { runId, resource })
        return { status: 'created' as const, runId, busy }
      })
    } catch (error) {
      if (!(error instanceof RunConflict)) throw error
      if (error.holder) return { status: 'conflict', ...error.holder }
      if (attempt >= 5) throw new Error('could not create a run: its resources keep changing hands')
    }
  }
}

/** The runs sweeping these resources, by resource. */
async function busyResources(trx: Kysely<Database>, resources: string[]): Promise<BusyResource[]> {
  if (resources.length === 0) return []
  const rows = await trx
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('resource', 'in', resources)
    .where('status', 'in', UNFINISHED)
    .orderBy('resource')
    .execute()
  return rows.map((row) => ({ resource: row.resource, runId: row.run_id }))
}

/** Fails the unfinished sweeps of these resources that have shown no progress for `seconds`. */
async function abandonStaleSweeps(trx: Kysely<Database>, resources: string[], seconds: number) {
  const stale = await trx
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('resource', 'in', resources)
    .where('status', 'in', UNFINISHED)
    .where('progress_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    .execute()
  for (const { run_id, resource } of stale) {
    await endSweep(trx, run_id, resource, null, {
      status: 'failed',
      error: `abandoned: no progress for ${seconds} s (its job was lost or its worker died)`,
    })
  }
}

async function lockRun(trx: Kysely<Database>, runId: number) {
  return trx
    .selectFrom('sync.runs')
    .select(['id', 'mode'])
    .where('id', '=', runId)
    .forUpdate()
    .executeTakeFirst()
}

/** Derives the run's status, start, end and error from its sweeps. Call with the run's row locked. */
async function deriveRunStatus(trx: Kysely<Database>, runId: number): Promise<void> {
  await sql`
    update sync.runs r set
      status = case
        when s.unfinished = 0 then case when s.failed > 0 then 'failed' else 'succeeded' end
        when s.started > 0 then 'running'
        else 'queued' end,
      started_at = coalesce(r.started_at, s.first_start),
      finished_at = case when s.unfinished = 0 then coalesce(r.finished_at, now()) end,
      error = s.errors
    from (
      select
        count(*) filter (where status in ('queued', 'running')) as unfinished,
        count(*) filter (where status = 'failed') as failed,
        count(*) filter (where status <> 'queued') as started,
        min(started_at) as first_start,
        string_agg(resource || ': ' || error, '; ' order by resource) filter (where error is not null) as errors
      from sync.run_resources where run_id = ${runId}
    ) s
    where r.id = ${runId}
  `.execute(trx)
}

export interface ClaimedSweep {
  mode: RunMode
  /** When the sweep first started: rows written before it and not since were not seen by it. */
  startedAt: Date
  /** Where an earlier attempt stopped, or null. */
  checkpoint: unknown
  /** Records the sweep has fetched so far, earlier attempts included. */
  records: number
}

/**
 * Starts the sweep (or takes over an unfinished one) under `key.lease`; a previous attempt's later
 * writes are refused. Null when the sweep has finished or does not exist.
 */
export async function claimSweep(db: Db, key: SweepKey): Promise<ClaimedSweep | null> {
  return db.transaction().execute(async (trx) => {
    const run = await lockRun(trx, key.runId)
    if (!run) return null
    const sweep = await trx
      .updateTable('sync.run_resources')
      .set({
        status: 'running',
        lease: key.lease,
        started_at: sql<Date>`coalesce(started_at, now())`,
        finished_at: null,
        progress_at: sql<Date>`now()`,
      })
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('status', 'in', UNFINISHED)
      .returning(['started_at', 'checkpoint', 'records'])
      .executeTakeFirst()
    if (!sweep?.started_at) return null
    await deriveRunStatus(trx, key.runId)
    return {
      mode: run.mode,
      startedAt: sweep.started_at,
      checkpoint: sweep.checkpoint,
      records: sweep.records,
    }
  })
}

/** Adds progress to the sweep; throws SweepLeaseLost when this attempt no longer owns it. */
export async function saveSweepProgress(db: Kysely<Database>, key: SweepKey, progress: SweepProgress) {
  const result = await db
    .updateTable('sync.run_resources')
    .set((eb) => ({
      records: eb('records', '+', progress.records ?? 0),
      pages: eb('pages', '+', progress.pages ?? 0),
      api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      reconciled: eb('reconciled', '+', progress.reconciled ?? 0),
      tombstoned: eb('tombstoned', '+', progress.tombstoned ?? 0),
      progress_at: sql<Date>`now()`,
      ...(progress.remoteCount === undefined ? {} : { remote_count: progress.remoteCount }),
      ...(progress.checkpoint === undefined ? {} : { checkpoint: JSON.stringify(progress.checkpoint) }),
    }))
    .where('run_id', '=', key.runId)
    .where('resource', '=', key.resource)
    .where('lease', '=', key.lease)
    .where('status', '=', 'running')
    .executeTakeFirst()
  if (result.numUpdatedRows === 0n) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
}

export type SweepEnd = { status: 'succeeded'; error?: undefined } | { status: 'failed'; error: string }

async function endSweep(
  trx: Kysely<Database>,
  runId: number,
  resource: string,
  lease: string | null,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<boolean> {
  await lockRun(trx, runId)
  let query = trx
    .updateTable('sync.run_resources')
    .set((eb) => ({
      status: end.status,
      error: end.error ?? null,
      finished_at: sql<Date>`now()`,
      progress_at: sql<Date>`now()`,
      api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      ...(progress.remoteCount === undefined ? {} : { remote_count: progress.remoteCount }),
    }))
    .where('run_id', '=', runId)
    .where('resource', '=', resource)
    .where('status', 'in', UNFINISHED)
  if (lease !== null) query = query.where('lease', '=', lease)
  const result = await query.executeTakeFirst()
  if (result.numUpdatedRows === 0n) return false
  await deriveRunStatus(trx, runId)
  return true
}

/**
 * Ends the sweep held by `key` and derives its run's status; inside the caller's transaction when
 * given one (e.g. with the resource state). Throws SweepLeaseLost when this attempt no longer owns it.
 */
export async function finishSweep(
  db: Kysely<Database>,
  key: SweepKey,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<void> {
  const ended = await inTransaction(db, (trx) =>
    endSweep(trx, key.runId, key.resource, key.lease, end, progress),
  )
  if (!ended) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
}

/**
 * Fails an unfinished sweep whoever holds it: for a job that cannot run (dead-lettered, unknown
 * resource, service switched off). False when it had already finished.
 */
export async function abandonSweep(
  db: Db,
  runId: number,
  resource: string,
  reason: string,
): Promise<boolean> {
  return db
    .transaction()
    .execute((trx) => endSweep(trx, runId, resource, null, { status: 'failed', error: reason }))
}

export type RunView = NonNullable<Awaited<ReturnType<typeof readRuns>>[number]>

/** Runs with their sweeps, newest first: by id, or the latest `limit`. */
export async function readRuns(db: Db, options: { ids?: number[]; limit?: number } = {}) {
  let query = db.selectFrom('sync.runs').selectAll().orderBy('id', 'desc')
  if (options.ids) query = query.where('id', 'in', options.ids.length ? options.ids : [0])
  const runs = await query.limit(options.limit ?? 20).execute()
  if (runs.length === 0) return []
  const sweeps = await db
    .selectFrom('sync.run_resources')
    .select([
      'run_id',
      'resource',
      'status',
      'records',
      'pages',
      'remote_count',
      'api_requests',
      'reconciled',
      'tombstoned',
      'started_at',
      'finished_at',
      'error',
    ])
    .where(
      'run_id',
      'in',
      runs.map((run) => run.id),
    )
    .orderBy('resource')
    .execute()
  return runs.map((run) => ({
    ...run,
    resources: sweeps.filter((sweep) => sweep.run_id === run.id).map(({ run_id: _, ...sweep }) => sweep),
  }))
}

/** A run with its sweeps (`GET /admin/runs/:id`), or undefined. */
export async function readRun(db: Db, id: number): Promise<RunView | undefined> {
  return (await readRuns(db, { ids: [id] }))[0]
}

/** The unfinished sweeps, oldest first. */
export async function readActiveSweeps(db: Db) {
  return db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource', 'status', 'pages', 'records', 'started_at', 'progress_at'])
    .where('status', 'in', UNFINISHED)
    .orderBy('run_id')
    .execute()
}
