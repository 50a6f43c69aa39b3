// Runs as the admin API, the CLI and the status read them.
import { sql } from 'kysely'
import type { Db } from '../database.ts'
import type { RunStatus } from '../schema.ts'
import { UNDER_WAY } from './states.ts'

export type RunView = NonNullable<Awaited<ReturnType<typeof readRuns>>[number]>

export interface RunFilter {
  ids?: number[]
  /** At most this many runs (default 20). */
  limit?: number
  /** Only runs older than this run id: the next page of a list. */
  before?: number
  /** Only runs in one of these statuses. */
  statuses?: readonly RunStatus[]
  /** Only runs with a sweep of this resource. */
  resource?: string
}

/** Runs with their sweeps, newest first: by id, or the latest `limit` that pass the filter. */
export async function readRuns(db: Db, options: RunFilter = {}) {
  let query = db.selectFrom('sync.runs as r').selectAll('r').orderBy('r.id', 'desc')
  if (options.ids) query = query.where('r.id', 'in', options.ids.length ? options.ids : [0])
  if (options.before !== undefined) query = query.where('r.id', '<', options.before)
  if (options.statuses?.length) query = query.where('r.status', 'in', options.statuses)
  const { resource } = options
  if (resource !== undefined) {
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('sync.run_resources as s')
          .select('s.run_id')
          .whereRef('s.run_id', '=', 'r.id')
          .where('s.resource', '=', resource),
      ),
    )
  }
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
      'state',
      sql<boolean>`state = 'waiting'`.as('waiting'),
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

/** A sweep under way (runs/states.ts): running, or handed back by a process that stopped. */
const underWay = sql`s.state in (${sql.join([...UNDER_WAY])})`

/**
 * Whether a full sweep of the resource is under way that started at or after `since`: it reads every
 * record as it is at least then, and reconciles what it does not see.
 */
export async function fullSweepRunningSince(db: Db, resource: string, since: Date): Promise<boolean> {
  const result = await sql<{ found: boolean }>`
    select exists (
      select 1 from sync.run_resources s join sync.runs r on r.id = s.run_id
      where s.resource = ${resource} and ${underWay} and r.mode = 'full' and s.started_at >= ${since}
    ) as found
  `.execute(db)
  return result.rows[0]?.found ?? false
}

/** Whether a full sweep of the resource is under way (see `underWay`), whenever it started. */
export async function fullSweepRunning(db: Db, resource: string): Promise<boolean> {
  const result = await sql<{ found: boolean }>`
    select exists (
      select 1 from sync.run_resources s join sync.runs r on r.id = s.run_id
      where s.resource = ${resource} and ${underWay} and r.mode = 'full'
    ) as found
  `.execute(db)
  return result.rows[0]?.found ?? false
}

/**
 * Whether a full sweep of the resource succeeded that started after run `runId` was asked for: it read
 * every page as it was after then, and reconciled what it did not see.
 */
export async function fullSweepSucceededSinceRun(db: Db, resource: string, runId: number): Promise<boolean> {
  const result = await sql<{ found: boolean }>`
    select exists (
      select 1 from sync.run_resources s
      join sync.runs r on r.id = s.run_id
      join sync.runs asked on asked.id = ${runId}
      where s.resource = ${resource} and s.status = 'succeeded' and r.mode = 'full'
        and s.started_at >= asked.created_at
    ) as found
  `.execute(db)
  return result.rows[0]?.found ?? false
}
