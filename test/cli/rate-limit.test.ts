// Which sweeps `resync --wait` shows as waiting for their upstream's rate limit: running, no page saved
// for a while, and the shared budget of their upstream spent or paused by a 429; the others not.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { readSweepWaits } from '../../src/cli/rate-limit.ts'
import { prepareBudget } from '../../src/store/budget.ts'
import { claimSweep, readRun } from '../../src/store/runs.ts'
import { useTestDatabase } from '../support/database.ts'
import { startTestRun } from '../sync/support.ts'

const database = useTestDatabase()

beforeEach(async () => {
  await sql`truncate sync.runs, sync.run_resources, sync.upstream_budget cascade`.execute(database.db)
  await prepareBudget(database.db, 'crm', 3)
  await prepareBudget(database.db, 'reservation', 3)
})

/** A run of `resources`, each sweep running and its last page saved `secondsAgo` ago. */
async function runningRun(resources: string[], secondsAgo: number) {
  const { result } = await startTestRun(database.db, { mode: 'full', resources })
  if (result.status !== 'started') throw new Error('not started')
  for (const resource of resources)
    await claimSweep(database.db, { runId: result.runId, resource, lease: randomUUID() })
  await sql`update sync.run_resources set progress_at = now() - make_interval(secs => ${secondsAgo})
    where run_id = ${result.runId}`.execute(database.db)
  const run = await readRun(database.db, result.runId)
  if (!run) throw new Error('no run')
  return run
}

/** Every request of the window spent: the earliest slot frees in `seconds`. */
async function spend(upstream: string, seconds = 5) {
  await sql`update sync.upstream_budget_slots set free_at = now() + make_interval(secs => ${seconds})
    where upstream = ${upstream}`.execute(database.db)
}

describe('sweeps waiting for the rate limit', () => {
  it('are the stalled running sweeps of an upstream whose budget is spent', async () => {
    const run = await runningRun(['crm.people', 'crm.deals', 'reservations.contacts'], 10)
    await spend('crm')
    const waits = await readSweepWaits(database.db, run)
    expect(Object.fromEntries(waits)).toEqual({
      'crm.people': "waiting for the CRM's rate limit",
      'crm.deals': "waiting for the CRM's rate limit",
    })
  })

  it('say how long a pause after a 429 lasts', async () => {
    const run = await runningRun(['reservations.bookings'], 10)
    await sql`update sync.upstream_budget set paused_until = now() + interval '8 s'
      where upstream = 'reservation'`.execute(database.db)
    const waits = await readSweepWaits(database.db, run)
    expect(waits.get('reservations.bookings')).toMatch(
      /^waiting for the reservation service's rate limit \(paused by a 429, [78] s left\)$/,
    )
  })

  it('leave out a sweep that saved a page just now, and any sweep while the budget has requests left', async () => {
    const fresh = await runningRun(['crm.people'], 0)
    await spend('crm')
    expect(await readSweepWaits(database.db, fresh)).toEqual(new Map())

    await sql`truncate sync.runs, sync.run_resources cascade`.execute(database.db)
    const stalled = await runningRun(['crm.people'], 10)
    await sql`update sync.upstream_budget_slots set free_at = '-infinity' where slot = 0`.execute(database.db)
    expect(await readSweepWaits(database.db, stalled)).toEqual(new Map())
  })

  it('are none of a run with no sweep running, without asking the database', async () => {
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    if (result.status !== 'started') throw new Error('not started')
    const run = await readRun(database.db, result.runId)
    await spend('crm')
    const unused = {} as typeof database.db // any query would throw
    expect(await readSweepWaits(unused, run as NonNullable<typeof run>)).toEqual(new Map())
  })
})
