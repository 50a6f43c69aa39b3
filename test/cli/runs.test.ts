// `crm-sync runs` and `crm-sync cancel` against a test database: the history as a table and as JSON,
// its filters and pages, a cancellation and its exit codes, and neither command creating a cluster or
// migrating a database that has no schema. They make no upstream request: the CRM named is nowhere.
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { claimSweep, finishSweep, readRun } from '../../src/store/runs.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { startTestRun } from '../sync/support.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

let database: TestDatabase
let cwd: string
let env: Record<string, string>

beforeAll(async () => {
  cwd = await workdir()
})
afterAll(removeWorkdirs)
beforeEach(async () => {
  database = await createTestDatabase()
  env = { CRM_BASE_URL: 'http://127.0.0.1:9', CRM_API_KEY: 'unused-key', DATABASE_URL: database.url }
})
afterEach(async () => {
  await dropTestDatabase(database)
})

async function startRun(resources: string[], mode: 'full' | 'incremental' = 'incremental'): Promise<number> {
  const { result } = await startTestRun(database.db, { mode, resources })
  if (result.status !== 'started') throw new Error('not started')
  return result.runId
}

async function endSweep(
  runId: number,
  resource: string,
  end: { status: 'succeeded' } | { status: 'failed'; error: string },
) {
  const key = { runId, resource, lease: randomUUID() }
  await claimSweep(database.db, key)
  await finishSweep(database.db, async () => {}, key, end)
}

interface Listed {
  runs: { id: number; status: string; error: string | null; resources: { resource: string }[] }[]
  next_before: number | null
}

describe('crm-sync runs', () => {
  it('lists the runs newest first as a table, and as JSON with their sweeps', async () => {
    const succeeded = await startRun(['crm.deals', 'crm.people'])
    await endSweep(succeeded, 'crm.deals', { status: 'succeeded' })
    await endSweep(succeeded, 'crm.people', { status: 'succeeded' })
    const failed = await startRun(['crm.tasks'], 'full')
    await endSweep(failed, 'crm.tasks', { status: 'failed', error: 'the CRM answered 503' })
    const queued = await startRun(['crm.tasks'])

    const table = await cli(['runs'], env, cwd)
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trim().split('\n')
    expect(lines[0]).toMatch(
      /^\s*id\s+mode\s+status\s+requested by\s+started\s+duration\s+records\s+requests\s+error$/,
    )
    expect(lines.slice(1).map((line) => Number(line.trim().split(/\s+/)[0]))).toEqual([
      queued,
      failed,
      succeeded,
    ])
    expect(lines[2]).toMatch(
      /full\s+failed\s+test\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+\d+ s\s+0\s+0\s+crm\.tasks: the CRM answered 503$/,
    )
    expect(lines[1]).toMatch(/incremental\s+queued\s+test\s+-\s+-\s+0\s+0$/)

    const json = await cli(['runs', '--json'], env, cwd)
    expect(json.code).toBe(0)
    const listed = JSON.parse(json.stdout) as Listed
    expect(listed.next_before).toBeNull()
    expect(listed.runs.map((run) => run.id)).toEqual([queued, failed, succeeded])
    expect(listed.runs[2]?.resources.map((sweep) => sweep.resource)).toEqual(['crm.deals', 'crm.people'])
    // the schema was there: nothing to say on stderr but which database and CRM it uses
    expect(json.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^database: 127\.0\.0\.1:\d+\/crm_sync_test_\w+ as user \w+ \(DATABASE_URL from the environment\)$/,
      ),
      'upstream: CRM http://127.0.0.1:9 (CRM_BASE_URL from the environment); reservation service off',
    ])
  })

  it('filters failed runs and runs of a resource, and pages with --limit and --before', async () => {
    const ids: number[] = []
    for (const resource of ['crm.deals', 'crm.people', 'crm.deals']) {
      const runId = await startRun([resource])
      const end =
        resource === 'crm.people'
          ? { status: 'failed' as const, error: 'no' }
          : { status: 'succeeded' as const }
      await endSweep(runId, resource, end)
      ids.push(runId)
    }
    const [first, second, third] = ids as [number, number, number]
    const listed = async (...args: string[]) => {
      const result = await cli(['runs', '--json', ...args], env, cwd)
      expect(result.code, result.stderr).toBe(0)
      return JSON.parse(result.stdout) as Listed
    }
    expect((await listed('--failed')).runs.map((run) => run.id)).toEqual([second])
    expect((await listed('--resource', 'crm.deals')).runs.map((run) => run.id)).toEqual([third, first])
    const page = await listed('--limit', '2')
    expect(page.runs.map((run) => run.id)).toEqual([third, second])
    expect(page.next_before).toBe(second)
    expect((await listed('--limit', '2', '--before', String(second))).runs.map((run) => run.id)).toEqual([
      first,
    ])

    const table = await cli(['runs', '--limit', '1'], env, cwd)
    expect(table.stdout).toContain(`older runs: crm-sync runs --before ${third}`)
    const none = await cli(['runs', '--resource', 'crm.users'], env, cwd)
    expect(none.stdout.trim()).toBe('no runs')
  })

  it.each([
    [['--limit', '0'], /--limit must be a whole number from 1 to 100/],
    [['--limit', '101'], /--limit must be/],
    [['--before', 'x'], /--before must be a whole number/],
    [['--resource', 'crm.nothing'], /unknown resource crm\.nothing/],
    [['extra'], /unexpected argument "extra"/],
  ])('exits 2 for %j', async (args, message) => {
    const result = await cli(['runs', ...args], env, cwd)
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(message)
  })
})

describe('crm-sync cancel', () => {
  it('ends the unfinished sweeps as failed, starts the sweep that waited, and exits 1 once finished', async () => {
    const runId = await startRun(['crm.companies', 'crm.people'], 'full')
    await endSweep(runId, 'crm.companies', { status: 'succeeded' })
    await claimSweep(database.db, { runId, resource: 'crm.people', lease: 'worker' })
    const waiting = await startRun(['crm.people'])
    expect((await readRun(database.db, waiting))?.resources[0]?.waiting).toBe(true)

    const table = await cli(['cancel', String(runId)], env, cwd)
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toContain(`run ${runId} cancelled: crm.people ended as failed`)
    expect(table.stdout).toContain('crm.people: cancelled by cli')
    expect(await readRun(database.db, runId)).toMatchObject({
      status: 'failed',
      error: 'crm.people: cancelled by cli',
    })
    // the sweep that waited for crm.people has its job now
    expect((await readRun(database.db, waiting))?.resources[0]?.waiting).toBe(false)
    // and the run's end goes on to the service's log: one report for a replica to take up
    const boss = await startJobQueue(database.url, createLogger({ level: 'silent' }))
    try {
      const reports = await boss.fetch(QUEUES.runReport.name, { batchSize: 10 })
      expect(reports.map((job) => job.data)).toEqual([{ runId }])
    } finally {
      await boss.stop({ graceful: false })
    }

    const again = await cli(['cancel', String(runId), '--json'], env, cwd)
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`run ${runId} has already finished (failed)`)
    expect(JSON.parse(again.stdout)).toMatchObject({ id: runId, status: 'failed' })

    const json = await cli(['cancel', String(waiting), '--json'], env, cwd)
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: waiting,
      status: 'failed',
      resources: [{ resource: 'crm.people', status: 'failed', error: 'cancelled by cli' }],
    })
  })

  it('exits 1 for an unknown run and 2 without a run id', async () => {
    const unknown = await cli(['cancel', '987654'], env, cwd)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('no run 987654')
    expect((await cli(['cancel'], env, cwd)).code).toBe(2)
    expect((await cli(['cancel', 'abc'], env, cwd)).code).toBe(2)
    expect((await cli(['cancel', '1', '2'], env, cwd)).code).toBe(2)
  })
})

describe('without a schema', () => {
  it('says so and exits 1, migrating nothing', async () => {
    const empty = await createTestDatabase({ empty: true })
    try {
      for (const args of [['runs'], ['runs', '--json'], ['cancel', '1']]) {
        const result = await cli(args, { ...env, DATABASE_URL: empty.url }, cwd)
        expect(result.code, args.join(' ')).toBe(1)
        expect(result.stderr).toContain('the database has no crm-sync schema yet')
        expect(result.stdout).toBe('')
      }
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_namespace where nspname in ('sync', 'crm', 'pgboss')`.execute(
        empty.db,
      )
      expect(rows[0]?.n).toBe(0)
    } finally {
      await dropTestDatabase(empty)
    }
  })

  it('creates no embedded cluster when DATABASE_URL is not set', async () => {
    const dataDir = join(await workdir(), 'data')
    const result = await cli(['runs'], { ...env, DATABASE_URL: '', DATA_DIR: dataDir }, cwd)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`there is no embedded PostgreSQL in ${dataDir}`)
    expect(existsSync(join(dataDir, 'postgres'))).toBe(false)
  })
})
