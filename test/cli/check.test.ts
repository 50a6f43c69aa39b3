// `crm-sync check` says in one line each whether the database, both keys, the hooks and PUBLIC_URL
// work, changing nothing; and a running crm-sync whose key the upstream refuses is not ready.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { appliedMigrationCount } from '../../src/store/migrate.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { ENGINE_SECRET, type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

interface CheckJson {
  checks: { check: string; outcome: string; detail: string }[]
}

let sandbox: Sandbox
let database: TestDatabase
let fresh: TestDatabase
let engine: Engine
let cwd: string

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null, reservationRateLimit: null } })
  database = await createTestDatabase()
  fresh = await createTestDatabase({ empty: true })
  cwd = await workdir()
  engine = await startEngine(sandbox, database.url, {
    CRM_RATE_LIMIT: '1000',
    RESERVATION_RATE_LIMIT: '1000',
  })
})
afterAll(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  if (fresh) await dropTestDatabase(fresh)
  await removeWorkdirs()
})

const env = (overrides: Record<string, string> = {}) => ({
  CRM_BASE_URL: sandbox.crmUrl,
  CRM_API_KEY: sandbox.crmApiKey,
  RESERVATION_BASE_URL: sandbox.reservationUrl,
  RESERVATION_API_KEY: sandbox.reservationApiKey,
  DATABASE_URL: database.url,
  PUBLIC_URL: engine.publicUrl,
  WEBHOOK_SECRET: ENGINE_SECRET,
  ...overrides,
})

const outcomes = (json: CheckJson) =>
  Object.fromEntries(json.checks.map((line) => [line.check, line.outcome]))

describe('crm-sync check', () => {
  it('says ok for a reachable, migrated database, accepted keys, registered hooks and a live PUBLIC_URL', async () => {
    // the engine has registered its hooks once /readyz reports them
    await waitFor(
      async () => ((await sandbox.control.crm.hooks()).length >= 12 ? true : undefined),
      30_000,
      'the hooks registered',
    )
    const { code, stdout } = await cli(['check'], env(), cwd)
    expect(code, stdout).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines.map((line) => line.split(/\s+/).slice(0, 2).join(' '))).toEqual([
      'ok database',
      'ok publication',
      'ok history',
      'ok crm',
      'ok reservation',
      'ok hooks',
      'ok public-url',
    ])
    expect(stdout).toMatch(
      /database\s+127\.0\.0\.1:\d+\/crm_sync_test_\w+: reached; (\d+) of \1 migrations applied/,
    )
    expect(stdout).toMatch(/publication\s+publication crm_sync_mirror of \d+ tables/)
    expect(stdout).toMatch(/history\s+15 tables' history kept, about [\d,]+ versions in \d+ MiB/)
    expect(stdout).not.toContain(sandbox.crmApiKey)
  })

  it('names each refused key on its own line and exits 1', async () => {
    const { code, stdout } = await cli(
      ['check', '--json'],
      env({ CRM_API_KEY: 'wrong-crm-key', RESERVATION_API_KEY: 'wrong-reservation-key' }),
      cwd,
    )
    expect(code).toBe(1)
    const json = JSON.parse(stdout) as CheckJson
    expect(outcomes(json)).toMatchObject({ database: 'ok', crm: 'fail', reservation: 'fail' })
    const crm = json.checks.find((line) => line.check === 'crm')
    expect(crm?.detail).toMatch(/the key is refused: .*401/)
    expect(stdout).not.toContain('wrong-crm-key')
  })

  it("warns when a main table's writes make no version, and leaves it so", async () => {
    await sql`alter table crm.deals disable trigger history_update`.execute(database.db)
    try {
      const { code, stdout } = await cli(['check', '--json'], env(), cwd)
      expect(code, stdout).toBe(0)
      const history = (JSON.parse(stdout) as CheckJson).checks.find((line) => line.check === 'history')
      expect(history).toEqual({
        check: 'history',
        outcome: 'warn',
        detail:
          'history out of date: writes of crm.deals make no version (triggers); the next start or migrate ' +
          'brings it in line',
      })
      const { rows } = await sql<{ enabled: string }>`
        select tgenabled::text as enabled from pg_trigger
        where tgrelid = 'crm.deals'::regclass and tgname = 'history_update'`.execute(database.db)
      expect(rows).toEqual([{ enabled: 'D' }])
    } finally {
      await sql`alter table crm.deals enable trigger history_update`.execute(database.db)
    }
  })

  it('checks the keys of a database not migrated yet, and leaves it so', async () => {
    const { code, stdout } = await cli(['check', '--json'], env({ DATABASE_URL: fresh.url }), cwd)
    const json = JSON.parse(stdout) as CheckJson
    expect(code, stdout).toBe(0)
    expect(outcomes(json)).toMatchObject({ database: 'warn', crm: 'ok', reservation: 'ok' })
    expect(json.checks[0]?.detail).toMatch(/reached; 0 of \d+ migrations applied \(crm-sync migrate or start/)
    await expect(appliedMigrationCount(fresh.db)).rejects.toThrow() // no migration table: nothing ran
  })

  it('names a database it cannot reach, and exits 1', async () => {
    const { code, stdout } = await cli(
      ['check'],
      env({ DATABASE_URL: 'postgres://nobody:secret-password@127.0.0.1:9/none' }),
      cwd,
    )
    expect(code).toBe(1)
    expect(stdout).toMatch(
      /^fail\s+database\s+cannot connect to the database at 127\.0\.0\.1:9\/none: connection refused/,
    )
    expect(stdout).not.toContain('secret-password')
  })
})

describe('a crm-sync whose CRM key is refused', () => {
  it('is not ready, and says why to the admin token', async () => {
    const other = await createTestDatabase()
    const refused = await startEngine(sandbox, other.url, {
      CRM_API_KEY: 'wrong-crm-key',
      ADMIN_TOKEN: 'admin-token-for-readiness',
      INCREMENTAL_SYNC_INTERVAL: '10',
    })
    try {
      const readyz = (token?: string) =>
        fetch(`${refused.publicUrl}/readyz`, token ? { headers: { authorization: `Bearer ${token}` } } : {})
      const answer = await waitFor(
        async () => {
          const response = await readyz()
          return response.status === 503 ? response : undefined
        },
        30_000,
        'readiness to report the refused key',
      )
      expect(await answer.json()).toMatchObject({
        status: 'not ready',
        checks: { database: { ok: true }, upstream_keys: { ok: false } },
      })
      const detailed = (await (await readyz('admin-token-for-readiness')).json()) as {
        checks: { upstream_keys: { error: string } }
      }
      expect(detailed.checks.upstream_keys.error).toMatch(
        /^crm refused the API key at .*: not authorized \(401\)/,
      )
      const metrics = await (await fetch(`${refused.publicUrl}/metrics`)).text()
      expect(metrics).toMatch(/crm_sync_upstream_auth_failing\{upstream="crm"\} 1/)
      expect(metrics).toMatch(/crm_sync_upstream_auth_failing\{upstream="reservation"\} 0/)
    } finally {
      await refused.stop()
      await dropTestDatabase(other)
    }
  })
})
