// Every command says first which database and upstream accounts it uses, and where those settings
// came from (the shell over .env); the commands that read create no embedded cluster and migrate
// nothing (neither crm-sync's schema nor the job queue's); a database that cannot be reached, or that
// refuses the password, is named as such.
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.ts'
import { freePort } from '../../src/database/free-port.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

let sandbox: Sandbox
let database: TestDatabase
const extra: TestDatabase[] = []

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null } })
  database = await createTestDatabase()
})
afterAll(async () => {
  await sandbox?.stop()
  for (const each of [database, ...extra]) if (each) await dropTestDatabase(each)
  await removeWorkdirs()
})

const crm = () => ({
  CRM_BASE_URL: sandbox.crmUrl,
  CRM_API_KEY: sandbox.crmApiKey,
  UPSTREAM_MAX_RETRIES: '0',
})
const lines = (text: string) => text.split('\n')

async function schemas(db: TestDatabase): Promise<string[]> {
  const { rows } = await sql<{ nspname: string }>`
    select nspname from pg_namespace where nspname in ('sync', 'crm', 'reservations', 'pgboss')
    order by nspname`.execute(db.db)
  return rows.map((row) => row.nspname)
}

describe('the first lines of every command', () => {
  it('name the database and the upstreams, and which of the shell and .env set them', async () => {
    const cwd = await workdir()
    const url = new URL(database.url)
    url.password ||= 'a-password-never-shown' // the test server may trust any
    const dotenv = [
      `DATABASE_URL=${url}`,
      'CRM_BASE_URL=https://crm-from-dotenv.example.com',
      'RESERVATION_BASE_URL=https://reservations.example.com',
      'RESERVATION_API_KEY=reservation-key-from-dotenv',
    ]
    await writeFile(join(cwd, '.env'), `${dotenv.join('\n')}\n`)
    // A stale CRM_BASE_URL in the shell beats .env; empty reservation settings switch it off.
    const env = { ...crm(), RESERVATION_BASE_URL: '', RESERVATION_API_KEY: '' }
    const first = [
      `database: 127.0.0.1:${url.port || 5432}/${database.name} as user ${url.username} (DATABASE_URL from .env)`,
      `upstream: CRM ${sandbox.crmUrl} (CRM_BASE_URL from the environment, overrides .env); reservation ` +
        'service off (RESERVATION_BASE_URL is empty in the environment, which overrides .env)',
    ]
    const commands = [
      ['runs', '--json'],
      ['status', '--no-hooks'],
      ['cancel', '987654'],
      ['check'],
      ['hooks', 'list'],
      ['migrate'],
      ['resync', '--resource', 'crm.users', '--json'],
    ]
    for (const args of commands) {
      const result = await cli(args, env, cwd)
      expect(lines(result.stderr).slice(0, 2), args.join(' ')).toEqual(first)
      expect(result.stdout + result.stderr).not.toContain(url.password)
      expect(result.stdout + result.stderr).not.toContain('reservation-key-from-dotenv')
      if (args.includes('--json')) expect(() => JSON.parse(result.stdout)).not.toThrow()
    }
  }, 90_000)
})

describe('a variable no longer read', () => {
  it('gets one warning naming it, and the command goes on', async () => {
    const cwd = await workdir()
    const env = {
      ...crm(),
      DATABASE_URL: database.url,
      SYNC_LOOKBACK_SECONDS: '5',
      RECONCILE_BUDGET_PERCENT: '20',
    }
    const result = await cli(['check'], env, cwd)
    const output = result.stdout + result.stderr
    expect(
      output.match(/SYNC_LOOKBACK_SECONDS is no longer read: incremental sweeps read back 300 s/g),
    ).toHaveLength(1)
    expect(output.match(/RECONCILE_BUDGET_PERCENT is no longer read/g)).toHaveLength(1)
    expect(output).toMatch(/^ok\s+crm\s+/m)
  }, 30_000)
})

describe('commands that read', () => {
  it('create no embedded cluster where there is none, and say where they looked', async () => {
    const cwd = await workdir()
    const data = join(cwd, '.data')
    for (const args of [['status'], ['runs'], ['cancel', '1'], ['hooks', 'list']]) {
      const result = await cli(args, crm(), cwd)
      expect(result.code, args.join(' ')).toBe(1)
      expect(lines(result.stderr)[0]).toBe(
        `database: embedded PostgreSQL in ${data} (DATABASE_URL is not set)`,
      )
      expect(result.stderr).toContain(
        `crm-sync ${args[0] === 'hooks' ? 'hooks list' : args[0]}: no database: DATABASE_URL is not set and ` +
          `there is no embedded PostgreSQL in ${data} (crm-sync start creates it there); run this where ` +
          'crm-sync runs, or set DATA_DIR to its data folder or DATABASE_URL to its database',
      )
    }
    // check still checks the key, and warns about the database
    const check = await cli(['check'], crm(), cwd)
    expect(check.stdout).toMatch(
      /^warn\s+database\s+DATABASE_URL is not set and there is no embedded PostgreSQL in /m,
    )
    expect(check.stdout).toMatch(/^ok\s+crm\s+/m)
    expect(existsSync(data)).toBe(false)
  }, 60_000)

  it('status migrates neither a database without schema nor one without the job queue', async () => {
    const cwd = await workdir()
    const empty = await createTestDatabase({ empty: true })
    extra.push(empty)
    const bare = await cli(['status', '--no-hooks'], { ...crm(), DATABASE_URL: empty.url }, cwd)
    expect(bare.code).toBe(1)
    expect(bare.stderr).toContain(
      'crm-sync status: the database has no crm-sync schema yet (crm-sync migrate or start creates it)',
    )
    expect(await schemas(empty)).toEqual([])

    // What `crm-sync migrate` leaves: the schema, and no job queue yet (start installs it).
    await migrateToLatest(empty.db)
    const migrated = await cli(['status', '--json', '--no-hooks'], { ...crm(), DATABASE_URL: empty.url }, cwd)
    expect(migrated.code, migrated.stderr).toBe(0)
    expect(migrated.stderr).toContain('note: the job queue is not installed yet (crm-sync start installs it)')
    expect(JSON.parse(migrated.stdout).queues['resource-sweep']).toMatchObject({ queued: 0, active: 0 })
    expect(await schemas(empty)).toEqual(['crm', 'reservations', 'sync'])

    // hooks list reads the CRM on a database without schema too, and leaves it so
    const hooks = await cli(['hooks', 'list', '--json'], { ...crm(), DATABASE_URL: empty.url }, cwd)
    expect(hooks.code, hooks.stderr).toBe(0)
    expect(JSON.parse(hooks.stdout)).toEqual([])
    expect(await schemas(empty)).toEqual(['crm', 'reservations', 'sync'])
  }, 60_000)

  it('status shows an older schema as it is, and says so', async () => {
    const cwd = await workdir()
    const older = await createTestDatabase()
    extra.push(older)
    const { rows } = await sql<{ name: string }>`
      delete from sync.kysely_migration
      where name = (select max(name) from sync.kysely_migration) returning name`.execute(older.db)
    const result = await cli(['status', '--json', '--no-hooks'], { ...crm(), DATABASE_URL: older.url }, cwd)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(
      'note: the schema is older than this crm-sync: 1 migration(s) not applied yet (crm-sync migrate or ' +
        'start applies them; nothing is migrated here)',
    )
    const { rows: after } = await sql<{ n: number }>`
      select count(*)::int as n from sync.kysely_migration where name = ${rows[0]?.name}`.execute(older.db)
    expect(after[0]?.n).toBe(0)
  })
})

describe('a database that cannot be used', () => {
  it('is named as not reached', async () => {
    const port = await freePort()
    const url = `postgres://someone:secret-password@127.0.0.1:${port}/nowhere`
    for (const name of ['status', 'migrate']) {
      const result = await cli([name], { ...crm(), DATABASE_URL: url }, await workdir())
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(
        `crm-sync ${name}: cannot connect to the database at 127.0.0.1:${port}/nowhere: connection refused ` +
          '(is PostgreSQL running there?)',
      )
      expect(result.stderr).not.toContain('secret-password')
    }
  })

  it('refusing the password is an authentication failure, not a failed migration', async () => {
    const dataDir = await mkdtemp(join(await workdir(), 'embedded-'))
    await chmod(dataDir, 0o755) // the embedded server may run as the postgres user
    const server = await startEmbeddedPostgres({ dataDir })
    try {
      const url = `postgres://postgres:wrong-password@127.0.0.1:${server.port}/crm_sync`
      const env = { ...crm(), DATABASE_URL: url, LOG_LEVEL: 'warn', PORT: String(await freePort()) }
      const refused =
        `authentication failed: the database at 127.0.0.1:${server.port}/crm_sync refused the password ` +
        'of user postgres (password authentication failed for user "postgres")'
      const migrate = await cli(['migrate'], env, await workdir())
      expect(migrate.code).toBe(1)
      expect(migrate.stderr).toContain(`crm-sync migrate: ${refused}`)
      const start = await cli(['start'], env, await workdir())
      expect(start.code).toBe(1)
      expect(lines(start.stderr)[0]).toBe(
        `database: 127.0.0.1:${server.port}/crm_sync as user postgres (DATABASE_URL from the environment)`,
      )
      const logged = lines(start.stdout)
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as { msg: string }).msg)
      expect(logged).toContain(`start failed: ${refused}`)
      for (const output of [migrate.stdout + migrate.stderr, start.stdout + start.stderr]) {
        expect(output).not.toMatch(/migration/i)
        expect(output).not.toContain('wrong-password')
      }
    } finally {
      await server.stop()
    }
  }, 90_000)
})
