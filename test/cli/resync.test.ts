// `crm-sync resync` against the sandbox and a test database: a run started for the workers of a
// running crm-sync, refused while another sweeps the same resource, the resources it leaves to runs
// that already cover them, followed with --wait (in this process when no crm-sync runs) and a failed
// run's exit code. Ctrl-C while waiting: interrupted-resync.test.ts.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { people, resourceNames } from '../../src/resources/index.ts'
import { claimSweep, readRun, readRuns } from '../../src/store/runs.ts'
import { countLiveRows } from '../../src/store/sync-state.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

let sandbox: Sandbox
let database: TestDatabase
let engine: Engine | undefined
let cwd: string
let env: Record<string, string>

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: 30,
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
  cwd = await workdir()
})
afterAll(async () => {
  await sandbox?.stop()
  await removeWorkdirs()
})
beforeEach(async () => {
  database = await createTestDatabase()
  env = {
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    RESERVATION_BASE_URL: sandbox.reservationUrl,
    RESERVATION_API_KEY: sandbox.reservationApiKey,
    DATABASE_URL: database.url,
    CRM_RATE_LIMIT: '1000',
    RESERVATION_RATE_LIMIT: '1000',
  }
})
afterEach(async () => {
  sandbox.control.resetFaults()
  await engine?.stop()
  engine = undefined
  await dropTestDatabase(database)
})

const lastLine = (text: string) => text.trim().split('\n').at(-1) as string

describe('crm-sync resync without --wait', () => {
  it('starts a run of every enabled resource and prints its id', async () => {
    const { code, stdout, stderr } = await cli(['resync', '--json'], env, cwd)
    expect(code).toBe(0)
    const { run_id } = JSON.parse(stdout) as { run_id: number }
    const run = await readRun(database.db, run_id)
    expect(run).toMatchObject({ mode: 'incremental', status: 'queued', requested_by: 'cli' })
    expect(run?.resources).toHaveLength(resourceNames.length)
    // nobody works on this database: the operator is told where the run will go
    expect(stderr).toContain('no crm-sync is running on this database')
  })

  it('queues behind a sweep that holds its resource, and names the run that already covers a request', async () => {
    const first = await cli(['resync', '--full', '--resource', 'crm.people', '--json'], env, cwd)
    const { run_id } = JSON.parse(first.stdout) as { run_id: number }
    await claimSweep(database.db, { runId: run_id, resource: 'crm.people', lease: 'test' })

    // An incremental request of a resource a full sweep holds: its sweep waits, the run is started.
    const waits = await cli(['resync', '--resource', 'crm.companies', '--resource', 'crm.people'], env, cwd)
    expect(waits.code).toBe(0)
    expect(waits.stderr).toContain('crm.people is being swept; run')
    const queued = await readRuns(database.db, { limit: 1 })
    expect(queued[0]?.resources.find((sweep) => sweep.resource === 'crm.people')).toMatchObject({
      status: 'queued',
      waiting: true,
    })

    // A second full request of the same resource: the first run's id, so that the caller can follow it.
    const again = await cli(['resync', '--full', '--resource', 'crm.people', '--json'], env, cwd)
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout)).toEqual({ run_id, existing: true })
    expect(again.stderr).toContain(
      `a full run of these resources is already queued or running: run ${run_id}`,
    )
  })

  it('names the resources it leaves to the runs that already cover them', async () => {
    const people = await cli(['resync', '--full', '--resource', 'crm.people', '--json'], env, cwd)
    const { run_id: peopleRun } = JSON.parse(people.stdout) as { run_id: number }
    const companies = await cli(
      ['resync', '--full', '--resource', 'crm.people', '--resource', 'crm.companies'],
      env,
      cwd,
    )
    expect(companies.code).toBe(0)
    expect(companies.stderr).toContain(
      `crm-sync resync: left out, as a full run already queued or running sweeps it: crm.people (run ${peopleRun})\n`,
    )
    const companiesRun = Number(/^run (\d+) \(full\) started$/m.exec(companies.stdout)?.[1])
    expect((await readRun(database.db, companiesRun))?.resources.map((sweep) => sweep.resource)).toEqual([
      'crm.companies',
    ])

    const args = ['resync', '--full', '--json', '--resource', 'crm.people', '--resource', 'crm.companies']
    const deals = await cli([...args, '--resource', 'crm.deals'], env, cwd)
    expect(deals.code).toBe(0)
    const covered = [
      { resource: 'crm.companies', run_id: companiesRun },
      { resource: 'crm.people', run_id: peopleRun },
    ]
    expect(JSON.parse(deals.stdout)).toEqual({ run_id: expect.any(Number), covered })
    expect(deals.stderr).toContain(
      `left out, as a full run already queued or running sweeps them: crm.companies (run ${companiesRun}), crm.people (run ${peopleRun})`,
    )

    // Followed to its end (here, since no crm-sync runs), it is printed with them.
    const tasks = await cli([...args, '--resource', 'crm.tasks', '--wait'], env, cwd)
    expect(tasks.code).toBe(0)
    const run = JSON.parse(tasks.stdout) as { status: string; resources: { resource: string }[] }
    expect(run).toMatchObject({ status: 'succeeded', resources: [{ resource: 'crm.tasks' }], covered })
  }, 60_000)

  it('exits 2 for an unknown resource, or one of a service that is not configured', async () => {
    const unknown = await cli(['resync', '--resource', 'crm.persons'], env, cwd)
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown resource crm.persons')

    const off = await cli(
      ['resync', '--resource', 'reservations.bookings'],
      { ...env, RESERVATION_BASE_URL: '', RESERVATION_API_KEY: '' },
      cwd,
    )
    expect(off.code).toBe(2)
    expect(off.stderr).toContain('reservations.bookings is off')
    expect(await readRuns(database.db)).toEqual([])
  })
})

describe('crm-sync resync --wait', () => {
  it('sweeps in its own process when no crm-sync runs, and prints the finished run', async () => {
    const { code, stdout, stderr } = await cli(
      ['resync', '--wait', '--json', '--resource', 'crm.people', '--resource', 'crm.companies'],
      env,
      cwd,
    )
    expect(code).toBe(0)
    const run = JSON.parse(stdout) as { status: string; resources: { resource: string; records: number }[] }
    expect(run.status).toBe('succeeded')
    expect(run.resources.map((sweep) => [sweep.resource, sweep.records])).toEqual([
      ['crm.companies', 30],
      ['crm.people', 30],
    ])
    expect(await countLiveRows(database.db, people)).toBe(30)
    expect(stderr).toContain('no crm-sync is running on this database: sweeping in this process')
  })

  it('shows plain progress lines when not in a terminal, then a summary', async () => {
    const { code, stdout, stderr } = await cli(
      ['resync', '--wait', '--full', '--resource', 'crm.deals'],
      env,
      cwd,
    )
    expect(code).toBe(0)
    expect(stderr).toMatch(/^crm\.deals: queued, 0 records$/m)
    expect(stderr).toMatch(/^crm\.deals: succeeded, 30 of 30 records, \d+ s$/m)
    expect(stdout).toMatch(/^run \d+ \(full\) succeeded in \d+ s$/m)
    expect(stdout).toMatch(/^crm\.deals\s+succeeded\s+30\s+30\s/m)
    expect(stdout).not.toContain('\u001b[')
  })

  it('exits 1 when the run failed, with the error in the summary', async () => {
    sandbox.control.setFaults({ crm: { errorRate: 1 } })
    const { code, stdout } = await cli(
      ['resync', '--wait', '--resource', 'crm.projects'],
      { ...env, UPSTREAM_MAX_RETRIES: '0' },
      cwd,
    )
    expect(code).toBe(1)
    expect(stdout).toMatch(/^run \d+ \(incremental\) failed/m)
    expect(stdout).toMatch(/^crm\.projects: .+/m)
  })

  it('leaves the sweeps to a running crm-sync', async () => {
    engine = await startEngine(sandbox, database.url, {
      CRM_RATE_LIMIT: '1000',
      RESERVATION_RATE_LIMIT: '1000',
    })
    // the engine's own first run must be done before the resources are free again
    await waitFor(
      async () => {
        const runs = await readRuns(database.db)
        return runs.length > 0 && runs.every((run) => run.finished_at) ? true : undefined
      },
      30_000,
      'the first run of the engine',
    )
    const { code, stdout, stderr } = await cli(
      ['resync', '--wait', '--json', '--resource', 'crm.tasks'],
      env,
      cwd,
    )
    expect(code).toBe(0)
    expect(JSON.parse(lastLine(stdout))).toMatchObject({ status: 'succeeded' })
    expect(stderr).not.toContain('sweeping in this process')
  })
})
