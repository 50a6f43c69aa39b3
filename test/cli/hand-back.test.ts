// What Ctrl-C on `resync --wait` says of a sweep whose handler still runs in the command's process
// after its sweep has finished (between its end and its handler's return, or its last page in flight
// at the signal): what it became, not handed back. The whole command: interrupted-resync.test.ts.
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { handBack } from '../../src/cli/hand-back.ts'
import type { LocalSweep } from '../../src/cli/local-sweep-worker.ts'
import { createLogger } from '../../src/log.ts'
import { claimSweep, finishSweep, readRun } from '../../src/store/runs.ts'
import { type JobQueue, startJobQueue } from '../../src/sync/job-queue.ts'
import { startRun, sweepEnqueuer } from '../../src/sync/runs.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'

const logger = createLogger({ level: 'silent' })
let database: TestDatabase
let boss: JobQueue

beforeEach(async () => {
  database = await createTestDatabase()
  boss = await startJobQueue(database.url, logger)
})
afterEach(async () => {
  await boss.stop({ graceful: false })
  await dropTestDatabase(database)
})

/** Claims the sweeps of `resources` in run `runId` as this process's sweep worker would. */
async function takenHere(runId: number, resources: string[]): Promise<LocalSweep[]> {
  const { rows } = await sql<{ id: string; resource: string }>`
    select id, data->>'resource' as resource from pgboss.job
    where name = 'resource-sweep' and (data->>'runId')::int = ${runId}`.execute(database.db)
  const sweeps: LocalSweep[] = []
  for (const resource of resources) {
    const job = rows.find((row) => row.resource === resource)
    if (!job) throw new Error(`no job for ${resource}`)
    await claimSweep(database.db, { runId, resource, lease: `lease-${resource}` })
    sweeps.push({ jobId: job.id, runId, resource })
  }
  return sweeps
}

describe('handBack', () => {
  it('names a sweep that finished while its handler still ran here with its outcome, not as handed back', async () => {
    const started = await startRun(
      { db: database.db, enqueue: sweepEnqueuer(boss), reservationEnabled: false },
      { mode: 'full', resources: ['crm.companies', 'crm.deals', 'crm.people'], requestedBy: 'cli' },
    )
    if (started.status !== 'started') throw new Error('no run started')
    const { runId } = started
    const here = await takenHere(runId, ['crm.companies', 'crm.deals', 'crm.people'])
    const end = (resource: string, status: 'succeeded' | 'failed') =>
      finishSweep(
        database.db,
        sweepEnqueuer(boss),
        { runId, resource, lease: `lease-${resource}` },
        status === 'failed' ? { status, error: 'crm GET /api/deals: server error 500' } : { status },
      )
    await end('crm.companies', 'succeeded')
    await end('crm.deals', 'failed')
    const local = { running: () => here, settled: async () => {} }

    const lines = await handBack({ db: database.db, boss, logger }, runId, local, 100)

    expect(lines).toEqual([
      `crm-sync resync: stopped following run ${runId}`,
      'finished: crm.companies succeeded; crm.deals failed',
      'no crm-sync is running on this database, so nothing sweeps it now: crm.people waits for the ' +
        'next `crm-sync start` (or `crm-sync resync --wait`), which resumes it from its checkpoint; ' +
        `\`crm-sync cancel ${runId}\` ends the run instead`,
    ])
    const run = await readRun(database.db, runId)
    expect(run?.resources.map((sweep) => [sweep.resource, sweep.status])).toEqual([
      ['crm.companies', 'succeeded'],
      ['crm.deals', 'failed'],
      ['crm.people', 'queued'],
    ])
  })
})
