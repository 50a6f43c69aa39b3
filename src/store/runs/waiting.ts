// Waiting sweeps started once their resource is free.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../database.ts'
import type { Database } from '../schema.ts'
import { lockResources } from './locks.ts'
import { HOLDS_RESOURCE, TRANSITIONS } from './states.ts'
import type { EnqueueSweep, SweepJob } from './types.ts'

/**
 * Sends the job of the next sweep waiting for `resource` when no sweep holds it: full sweeps first,
 * then the oldest run. Takes the resource's lock. Returns the sweep started, if any.
 */
export async function startWaitingSweep(
  trx: Kysely<Database>,
  resource: string,
  enqueue: EnqueueSweep,
): Promise<SweepJob | undefined> {
  await lockResources(trx, [resource])
  const active = await trx
    .selectFrom('sync.run_resources')
    .select('run_id')
    .where('resource', '=', resource)
    .where('state', 'in', HOLDS_RESOURCE)
    .executeTakeFirst()
  if (active) return undefined
  const next = await trx
    .selectFrom('sync.run_resources as s')
    .innerJoin('sync.runs as r', 'r.id', 's.run_id')
    .select('s.run_id')
    .where('s.resource', '=', resource)
    .where('s.state', 'in', TRANSITIONS.send.from)
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
