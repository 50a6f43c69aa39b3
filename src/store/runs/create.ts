// A run asked for: one sweep per resource, sent at once when the resource is free, else waiting.
import type { Kysely } from 'kysely'
import type { Db } from '../database.ts'
import type { Database, RunMode } from '../schema.ts'
import { abandonStaleSweeps } from './end.ts'
import { lockResources, STALE_AFTER_SECONDS } from './locks.ts'
import { covers, HOLDS_RESOURCE, type SweepState, UNFINISHED_STATES } from './states.ts'
import type { CoveredResource, CreateRunResult, EnqueueSweep, RunRequest } from './types.ts'
import { startWaitingSweep } from './waiting.ts'

interface UnfinishedSweep {
  run_id: number
  resource: string
  mode: RunMode
  state: SweepState
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
): Promise<CreateRunResult> {
  const resources = [...new Set(request.resources)].sort()
  if (resources.length === 0) throw new Error('a run needs at least one resource')
  return db.transaction().execute(async (trx) => {
    await lockResources(trx, resources)
    await abandonStaleSweeps(trx, resources, STALE_AFTER_SECONDS, enqueue)
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
    if (request.mode === 'full' && waiting.length) await makeWayFor(trx, runId, waiting)
    return { status: 'created' as const, runId, covered, waiting }
  })
}

/** The queued and running sweeps of these resources, with their runs' modes. */
async function unfinishedSweeps(trx: Kysely<Database>, resources: string[]): Promise<UnfinishedSweep[]> {
  const rows = await trx
    .selectFrom('sync.run_resources as s')
    .innerJoin('sync.runs as r', 'r.id', 's.run_id')
    .select(['s.run_id', 's.resource', 'r.mode', 's.state'])
    .where('s.resource', 'in', resources)
    .where('s.state', 'in', UNFINISHED_STATES)
    .orderBy('s.run_id')
    .execute()
  return rows as UnfinishedSweep[]
}

/** Marks the incremental sweeps that hold these resources to make way for full run `runId`. */
async function makeWayFor(trx: Kysely<Database>, runId: number, resources: string[]): Promise<void> {
  await trx
    .updateTable('sync.run_resources as s')
    .from('sync.runs as r')
    .set({ make_way_for: runId })
    .whereRef('r.id', '=', 's.run_id')
    .where('r.mode', '=', 'incremental')
    .where('s.resource', 'in', resources)
    .where('s.state', 'in', HOLDS_RESOURCE)
    .where('s.make_way_for', 'is', null)
    .execute()
}
