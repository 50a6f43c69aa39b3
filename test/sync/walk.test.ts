// The walk of a sweep with fetching and applying overlapped, and pages applied on two connections:
// the same requests, the same counts and the same mirror as one page at a time; a checkpoint that
// never covers a page whose records are not committed, even when a later page commits first.
import { sql } from 'kysely'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { people } from '../../src/resources/index.ts'
import { readRun } from '../../src/store/runs.ts'
import type { SweepDeps } from '../../src/sync/sweep/deps.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { mirrorOf, sandboxConfig, startTestRun, sweep, sweepDeps, tappedPeople, truthOf } from './support.ts'

let database: TestDatabase
let sandbox: Sandbox

beforeEach(async () => {
  database = await createTestDatabase()
  // 20 records a page: 200 people make 10 pages; ties by id, as `peopleNewestFirst` lists them.
  sandbox = await startSandbox({
    seedSize: { people: 200 },
    behaviour: { crmRateLimit: null, maxPerpage: 20, tieOrder: 'by-id' },
  })
})
afterEach(async () => {
  await sandbox.stop()
  await dropTestDatabase(database)
})

const truth = () =>
  truthOf(
    sandbox.control.crm
      .liveIds('people')
      .map((id) => sandbox.control.crm.get('people', id) as { id: number }),
    people,
  )

/** Live people as the index lists them with `updated_at-desc`: newest first, ties by id. */
function peopleNewestFirst(): number[] {
  const records = sandbox.control.crm.liveIds('people').map((id) => {
    const record = sandbox.control.crm.get('people', id) as { id: number; updated_at: string }
    return { id, at: Date.parse(record.updated_at) }
  })
  return records.sort((a, b) => b.at - a.at || a.id - b.id).map((record) => record.id)
}

function onTwoConnections(deps: SweepDeps): SweepDeps {
  return { ...deps, settings: { ...deps.settings, applyConnections: 2 } }
}

async function checkpointOf(runId: number) {
  const result = await sql<{ checkpoint: { phase: string; nextPage?: number } | null }>`
    select checkpoint from sync.run_resources where run_id = ${runId} and resource = 'crm.people'
  `.execute(database.db)
  return result.rows[0]?.checkpoint ?? null
}

describe('a walk on two connections', () => {
  it('sends the same requests and counts the same pages as one page at a time', async () => {
    const deps = onTwoConnections(sweepDeps(database.db, sandboxConfig(sandbox)))
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const runId = await sweep(deps, { mode: 'full', resources: ['crm.people'] })
    const run = await readRun(database.db, runId)
    // The count, 10 full pages, the empty 11th.
    expect(run?.resources[0]).toMatchObject({
      status: 'succeeded',
      pages: 10,
      records: 200,
      api_requests: 12,
    })
    expect(await checkpointOf(runId)).toMatchObject({ phase: 'reconcile' })
    expect(await mirrorOf(database.db, people)).toEqual(truth())
  })

  it('writes a record listed on two pages in page order, its children once', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox))
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    // After page 1: a record of page 3 moves to the front, so page 1's last record is page 2's first.
    const moved = order[45] as number
    const during = onTwoConnections(
      sweepDeps(database.db, sandboxConfig(sandbox), {
        wrap: tappedPeople((page) => {
          if (page !== 1) return
          // an update moves it (a tag change alone leaves updated_at, and so the order, as it was)
          sandbox.control.crm.update('people', moved, { name: 'Moved' })
          sandbox.control.crm.addTag('people', moved, 'moved')
        }),
      }),
    )
    const runId = await sweep(during, { mode: 'full', resources: ['crm.people'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({ status: 'succeeded' })
    expect(await mirrorOf(database.db, people)).toEqual(truth())
  })

  it('never checkpoints past a page that has not committed, and resumes there', async () => {
    // The connection killed below reports its end on its client too; the test expects that.
    database.pool.on('connect', (client) => client.on('error', () => {}))
    const config = sandboxConfig(sandbox)
    await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    const onPage3 = order[45] as number
    const onPage5 = order[85] as number
    sandbox.control.crm.update('people', onPage3, { name: 'Changed on page 3' })
    // Moving onPage3 to the front shifts the pages: it is now the first record of page 1.
    const blocked = order[46] as number // on page 3 still
    // Another connection holds a lock on a row of page 3: its transaction waits, later pages go on.
    const locker = new pg.Client({ connectionString: database.url })
    await locker.connect()
    try {
      await locker.query('begin')
      await locker.query('select 1 from crm.people where id = $1 for update', [blocked])
      const { result, jobs } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
      if (result.status !== 'started') throw new Error('not started')
      const started = new Date()
      const job = { id: 'job-1', data: jobs[0], signal: new AbortController().signal }
      const first = createSweepHandler(onTwoConnections(sweepDeps(database.db, config)))([job])
      const outcome = first.then(
        () => 'returned',
        (error: Error) => error,
      )

      const written = async (id: number) => {
        const row = await sql<{ synced: Date }>`
          select _synced_at as synced from crm.people where id = ${id}
        `.execute(database.db)
        return (row.rows[0]?.synced ?? new Date(0)) >= started
      }
      await waitFor(async () => ((await written(onPage5)) ? true : undefined), 10_000, 'page 5 to commit')
      expect(await written(blocked)).toBe(false)
      const checkpoint = await checkpointOf(result.runId)
      expect(checkpoint?.nextPage).toBeLessThanOrEqual(3)

      // The waiting transaction's connection dies: the job fails, to be retried.
      await locker.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
      )
      expect(await outcome).toBeInstanceOf(Error)
      await locker.query('rollback')
      const after = await checkpointOf(result.runId)
      expect(after?.nextPage).toBeLessThanOrEqual(3)
      const halfway = (await readRun(database.db, result.runId))?.resources[0]
      expect(halfway?.status).toBe('running')

      const fetched: number[] = []
      const retry = createSweepHandler(
        onTwoConnections(
          sweepDeps(database.db, config, { wrap: tappedPeople((page) => fetched.push(page)) }),
        ),
      )
      await retry([{ ...job, signal: new AbortController().signal }])
      expect(fetched[0]).toBe(after?.nextPage)
      expect(await written(blocked)).toBe(true)
      const run = await readRun(database.db, result.runId)
      expect(run?.status).toBe('succeeded')
      expect(await mirrorOf(database.db, people)).toEqual(truth())
    } finally {
      await locker.end()
    }
  })
})
