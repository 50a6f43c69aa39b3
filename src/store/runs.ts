// Runs (sync.runs) and their per-resource sweeps (sync.run_resources). A run's status is derived from
// its sweeps, never set by hand: queued until one starts, running until all have finished, then
// succeeded only when every sweep succeeded.
//
// Concurrency: at most one active sweep per resource (its job sent: queued for a worker, or running),
// whichever replica asks. A sweep asked for while its resource is held waits (`job_sent_at` null) and
// is started when the active one ends: full sweeps first, then in run order. Everything that starts,
// ends or requeues a sweep first takes the resource's advisory lock (several in name order), then its
// run's row, so two requests racing for a resource see each other, and two sweeps of one run ending at
// once see each other when they derive the run's status. The unique partial index is the last word.
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

const UNFINISHED = ['queued', 'running'] as const
// A sweep writes progress after every page and every reconciled batch; one that has been silent for
// this long lost its job (dead-lettered, expired) and would otherwise block its resource forever.
export const DEFAULT_STALE_AFTER_SECONDS = 2 * 3600

function inTransaction<T>(db: Kysely<Database>, work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work)
}

// Arbitrary constant of this project: the first key of the advisory locks that serialise the sweeps of
// a resource (the second is the hash of its name).
const SWEEP_LOCK = 0x5eed

/** Takes the resources' advisory locks, in name order, until the end of the transaction. */
async function lockResources(trx: Kysely<Database>, resources: readonly string[]) {
  for (const resource of [...new Set(resources)].sort()) {
    await sql`select pg_advisory_xact_lock(${SWEEP_LOCK}, hashtext(${resource}))`.execute(trx)
  }
}

interface UnfinishedSweep {
  run_id: number
  resource: string
  mode: RunMode
  status: 'queued' | 'running'
}

/** Whether `sweep` already does what a request of `request.mode` asks for its resource. */
function covers(sweep: UnfinishedSweep, request: RunRequest): boolean {
  if (request.whenBusy === 'skip') return true
  if (request.mode === 'full') return sweep.mode === 'full'
  return sweep.status === 'queued'
}

/**
 * Creates a run with one sweep per resource and sends the jobs of those whose resource is free, all in
 * one transaction; the others wait for the sweep holding their resource. Resources that an unfinished
 * sweep already covers are left out (see `RunRequest.whenBusy`); when that leaves none, the run is not
 * created and the result names the run covering the first of them.
 */
export async function createRun(
  db: Db,
  request: RunRequest,
  enqueue: EnqueueSweep,
  options: { staleAfterSeconds?: number } = {},
): Promise<CreateRunResult> {
  const resources = [...new Set(request.resources)].sort()
  if (resources.length === 0) throw new Error('a run needs at least one resource')
  return db.transaction().execute(async (trx) => {
    await lockResources(trx, resources)
    await abandonStaleSweeps(
      trx,
      resources,
      options.staleAfterSeconds ?? DEFAULT_STALE_AFTER_SECONDS,
      enqueue,
    )
    const unfinished = await unfinishedSweeps(trx, resources)
    const covered: CoveredResource[] = []
    for (const resource of resources) {
      const coverer = unfinished.find((sweep) => sweep.resource === resource && covers(sweep, request))
      if (coverer) covered.push({ resource, runId: coverer.run_id })
    }
    const free = resources.filter((resource) => !covered.some((entry) => entry.resource === resource))
    const [first] = covered
    if (free.length === 0 && first) return { status: 'conflict' as const, ...first }
    const { id: runId } = await trx
      .insertInto('sync.runs')
      .values({ mode: request.mode, status: 'queued', requested_by: request.requestedBy })
      .returning('id')
      .executeTakeFirstOrThrow()
    await trx
      .insertInto('sync.run_resources')
      .values(free.map((resource) => ({ run_id: runId, resource, status: 'queued' as const })))
      .execute()
    const waiting: string[] = []
    for (const resource of free) {
      const started = await startWaitingSweep(trx, resource, enqueue)
      if (started?.runId !== runId) waiting.push(resource)
    }
    return { status: 'created' as const, runId, covered, waiting }
  })
}

/** The queued and running sweeps of these resources, with their runs' modes. */
async function unfinishedSweeps(trx: Kysely<Database>, resources: string[]): Promise<UnfinishedSweep[]> {
  const rows = await trx
    .selectFrom('sync.run_resources as s')
    .innerJoin('sync.runs as r', 'r.id', 's.run_id')
    .select(['s.run_id', 's.resource', 'r.mode', 's.status'])
    .where('s.resource', 'in', resources)
    .where('s.status', 'in', UNFINISHED)
    .orderBy('s.run_id')
    .execute()
  return rows as UnfinishedSweep[]
}

/**
 * Sends the job of the next sweep waiting for `resource` when no sweep holds it: full sweeps first,
 * then the oldest run. Takes the resource's lock. Returns the sweep started, if any.
 */
async function startWaitingSweep(
  trx: Kysely<Database>,
  resource: string,
  enqueue: EnqueueSweep,
): Promise<SweepJob | undefined> {
  await lockResources(trx, [resource])
  const active = await trx
    .selectFrom('sync.run_resources')
    .select('run_id')
    .where('resource', '=', resource)
    .where('status', 'in', UNFINISHED)
    .where('job_sent_at', 'is not', null)
    .executeTakeFirst()
  if (active) return undefined
  const next = await trx
    .selectFrom('sync.run_resources as s')
    .innerJoin('sync.runs as r', 'r.id', 's.run_id')
    .select('s.run_id')
    .where('s.resource', '=', resource)
    .where('s.status', '=', 'queued')
    .where('s.job_sent_at', 'is', null)
    .orderBy(sql`r.mode = 'full'`, 'desc')
    .orderBy('s.run_id')
    .limit(1)
    .executeTakeFirst()
  if (!next) return undefined
  await trx
    .updateTable('sync.run_resources')
    .set({ job_sent_at: sql<Date>`now()`, progress_at: sql<Date>`now()` })
    .where('run_id', '=', next.run_id)
    .where('resource', '=', resource)
    .execute()
  const job = { runId: next.run_id, resource }
  await enqueue(trx, job)
  return job
}

/**
 * Starts the waiting sweeps of these resources that nothing holds any more: a safety net for a hand-over
 * that did not happen (a process that died between the end of a sweep and its commit). Returns them.
 */
export async function startWaitingSweeps(
  db: Db,
  resources: readonly string[],
  enqueue: EnqueueSweep,
): Promise<SweepJob[]> {
  return db.transaction().execute(async (trx) => {
    const started: SweepJob[] = []
    for (const resource of [...new Set(resources)].sort()) {
      const job = await startWaitingSweep(trx, resource, enqueue)
      if (job) started.push(job)
    }
    return started
  })
}

/** Fails the active sweeps of these resources that have shown no progress for `seconds`. */
async function abandonStaleSweeps(
  trx: Kysely<Database>,
  resources: string[],
  seconds: number,
  enqueue: EnqueueSweep,
) {
  const stale = await trx
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('resource', 'in', resources)
    .where('status', 'in', UNFINISHED)
    .where('job_sent_at', 'is not', null)
    .where('progress_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    .execute()
  for (const { run_id, resource } of stale) {
    await endSweep(trx, enqueue, run_id, resource, null, {
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
      .where('job_sent_at', 'is not', null) // a waiting sweep has no job: a stale one is not its own
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

export interface SavedProgress {
  /** A full sweep of the resource is waiting for this one to end. */
  fullWaiting: boolean
}

/**
 * Adds progress to the sweep and tells whether a full sweep of its resource is waiting for it; throws
 * SweepLeaseLost when this attempt no longer owns it.
 */
export async function saveSweepProgress(
  db: Kysely<Database>,
  key: SweepKey,
  progress: SweepProgress,
): Promise<SavedProgress> {
  const row = await db
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
    .returning(
      sql<boolean>`exists (
        select from sync.run_resources w join sync.runs r on r.id = w.run_id
        where w.resource = ${key.resource} and w.status = 'queued' and w.job_sent_at is null
          and r.mode = 'full'
      )`.as('full_waiting'),
    )
    .executeTakeFirst()
  if (!row) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
  return { fullWaiting: row.full_waiting }
}

/**
 * Puts the sweep held by `key` back to wait for its resource, from the start (its walk's counters too),
 * and starts the sweep waiting for it: an incremental sweep makes way for a full one. Throws
 * SweepLeaseLost when this attempt no longer owns it.
 */
export async function yieldSweep(db: Db, enqueue: EnqueueSweep, key: SweepKey, progress: SweepProgress = {}) {
  await db.transaction().execute(async (trx) => {
    await lockResources(trx, [key.resource])
    await lockRun(trx, key.runId)
    const result = await trx
      .updateTable('sync.run_resources')
      .set((eb) => ({
        status: 'queued',
        job_sent_at: null,
        lease: null,
        checkpoint: null,
        started_at: null,
        records: 0,
        pages: 0,
        progress_at: sql<Date>`now()`,
        api_requests: eb('api_requests', '+', progress.apiRequests ?? 0),
      }))
      .where('run_id', '=', key.runId)
      .where('resource', '=', key.resource)
      .where('lease', '=', key.lease)
      .where('status', '=', 'running')
      .executeTakeFirst()
    if (result.numUpdatedRows === 0n) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
    await deriveRunStatus(trx, key.runId)
    await startWaitingSweep(trx, key.resource, enqueue)
  })
}

export type SweepEnd = { status: 'succeeded'; error?: undefined } | { status: 'failed'; error: string }

async function endSweep(
  trx: Kysely<Database>,
  enqueue: EnqueueSweep,
  runId: number,
  resource: string,
  lease: string | null,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<boolean> {
  await lockResources(trx, [resource])
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
  await startWaitingSweep(trx, resource, enqueue)
  return true
}

/**
 * Ends the sweep held by `key`, derives its run's status and starts the sweep waiting for its resource;
 * inside the caller's transaction when given one (e.g. with the resource state). Throws SweepLeaseLost
 * when this attempt no longer owns it.
 */
export async function finishSweep(
  db: Kysely<Database>,
  enqueue: EnqueueSweep,
  key: SweepKey,
  end: SweepEnd,
  progress: SweepProgress = {},
): Promise<void> {
  const ended = await inTransaction(db, (trx) =>
    endSweep(trx, enqueue, key.runId, key.resource, key.lease, end, progress),
  )
  if (!ended) throw new SweepLeaseLost(`${key.resource} in run ${key.runId}`)
}

/**
 * Fails an unfinished sweep whoever holds it, or however long it waited: for a job that cannot run
 * (dead-lettered, unknown resource, service switched off). False when it had already finished.
 */
export async function abandonSweep(
  db: Db,
  enqueue: EnqueueSweep,
  runId: number,
  resource: string,
  reason: string,
): Promise<boolean> {
  return db
    .transaction()
    .execute((trx) => endSweep(trx, enqueue, runId, resource, null, { status: 'failed', error: reason }))
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
      sql<boolean>`status = 'queued' and job_sent_at is null`.as('waiting'),
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
