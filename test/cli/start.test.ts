// `crm-sync start` as a process: configuration errors, a start on a given database, a start on the
// embedded one, and a clean stop on SIGTERM.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/database/free-port.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { readyStatus, runCli, waitFor } from '../support/process.ts'

const crm = { CRM_BASE_URL: 'https://crm.example.com', CRM_API_KEY: 'anything' }
const databases: TestDatabase[] = []
afterAll(async () => {
  await Promise.all(databases.map(dropTestDatabase))
})

/** A Node older than 24 on this machine (the system's), which the launcher runs Node 24 under. */
const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => {
  if (!existsSync(path)) return false
  const version = execFileSync(path, ['--version'], { encoding: 'utf8' })
  return Number(/^v(\d+)/.exec(version)?.[1]) < 24
})
if (!olderNode)
  console.log('launcher signal test skipped: no Node older than 24 at /usr/bin/node or /usr/local/bin/node')

// An embedded PostgreSQL is made (initdb) and migrated before /readyz: on a loaded 2-core machine
// that alone can take most of a minute.
const EMBEDDED_START_MS = 90_000
const EMBEDDED_TEST_MS = EMBEDDED_START_MS + 30_000

const workdir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'crm-sync-start-'))
  await chmod(dir, 0o755)
  return dir
}

describe('crm-sync start', () => {
  it('exits 2 naming every configuration problem, and no secret', async () => {
    const run = runCli(['start'], {
      cwd: await workdir(),
      env: {
        CRM_API_KEY: 'k-secret-value',
        PORT: 'abc',
        PUBLIC_URL: 'https://x.example.com',
        HOOK_OBJECT_TYPE: 'fat',
      },
    })
    expect(await run.exited).toBe(2)
    const output = run.output()
    for (const name of ['CRM_BASE_URL', 'PORT', 'WEBHOOK_SECRET', 'HOOK_OBJECT_TYPE'])
      expect(output).toContain(name)
    expect(output).toContain('4 problems')
    expect(output).not.toContain('k-secret-value')
  })

  it('migrates a given database, becomes ready, and stops cleanly on SIGTERM', async () => {
    const database = await createTestDatabase({ empty: true })
    databases.push(database)
    const port = await freePort()
    const run = runCli(['start'], {
      cwd: await workdir(),
      env: { ...crm, DATABASE_URL: database.url, PORT: String(port) },
    })
    await waitFor(() => readyStatus(port), 20_000, '/readyz').catch((error) => {
      throw new Error(`${error.message}\n${run.output()}`)
    })
    run.child.kill('SIGTERM')
    expect(await run.exited).toBe(0)
    expect(run.output()).toContain('"msg":"stopped"')
    expect(run.output()).not.toContain('anything') // the API key
  })

  it.skipIf(!olderNode).each(['SIGTERM', 'SIGINT'] as const)(
    'stops on %s sent to the launcher an older Node runs, leaving no service behind',
    async (signal) => {
      const database = await createTestDatabase({ empty: true })
      databases.push(database)
      const port = await freePort()
      const run = runCli(['start'], {
        cwd: await workdir(),
        env: { ...crm, DATABASE_URL: database.url, PORT: String(port) },
        node: olderNode,
      })
      await waitFor(() => readyStatus(port), 20_000, '/readyz').catch((error) => {
        throw new Error(`${error.message}\n${run.output()}`)
      })
      run.child.kill(signal)
      expect(await run.exited).toBe(0)
      expect(run.output()).toContain('"msg":"stopped"')
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow()
    },
  )

  it(
    'starts an embedded PostgreSQL when no DATABASE_URL is given, and stops it with itself',
    async () => {
      const cwd = await workdir()
      const [port, databasePort] = [await freePort(), await freePort()]
      const run = runCli(['start'], {
        cwd,
        env: { ...crm, PORT: String(port), EMBEDDED_POSTGRES_PORT: String(databasePort) },
      })
      await waitFor(() => readyStatus(port), EMBEDDED_START_MS, '/readyz').catch((error) => {
        throw new Error(`${error.message}\n${run.output()}`)
      })
      expect(existsSync(join(cwd, '.data', 'postgres', 'PG_VERSION'))).toBe(true)

      const password = (await readFile(join(cwd, '.data', 'postgres.password'), 'utf8')).trim()
      const client = new pg.Client({
        host: '127.0.0.1',
        port: databasePort,
        user: 'postgres',
        password,
        database: 'crm_sync',
      })
      await client.connect()
      const { rows } = await client.query<{ data_type: string }>(
        `select data_type from information_schema.columns
       where table_schema = 'crm' and table_name = 'deals' and column_name = 'value'`,
      )
      await client.end()
      expect(rows).toEqual([{ data_type: 'numeric' }])

      run.child.kill('SIGTERM')
      expect(await run.exited).toBe(0)
      expect(existsSync(join(cwd, '.data', 'postgres', 'postmaster.pid'))).toBe(false)
    },
    EMBEDDED_TEST_MS,
  )
})

describe('Ctrl-C in a terminal', () => {
  it(
    'stops crm-sync with its embedded PostgreSQL cleanly when the whole foreground group gets SIGINT',
    async () => {
      const cwd = await workdir()
      const port = await freePort()
      const run = runCli(['start'], { cwd, env: { ...crm, PORT: String(port) }, group: true })
      await waitFor(() => readyStatus(port), EMBEDDED_START_MS, '/readyz').catch((error) => {
        throw new Error(`${error.message}\n${run.output()}`)
      })
      process.kill(-(run.child.pid as number), 'SIGINT') // what a terminal does on Ctrl-C
      expect(await run.exited).toBe(0)
      expect(run.output()).toContain('"msg":"stopped"')
      expect(existsSync(join(cwd, '.data', 'postgres', 'postmaster.pid'))).toBe(false)
    },
    EMBEDDED_TEST_MS,
  )
})

describe('crm-sync migrate', () => {
  it('applies the migrations, then finds nothing to do', async () => {
    const database = await createTestDatabase({ empty: true })
    databases.push(database)
    const env = { ...crm, DATABASE_URL: database.url }
    const first = runCli(['migrate'], { cwd: await workdir(), env })
    expect(await first.exited).toBe(0)
    expect(first.output()).toContain('0001_mirror')
    const second = runCli(['migrate'], { cwd: await workdir(), env })
    expect(await second.exited).toBe(0)
    expect(second.output()).toContain('schema up to date')
    const published = await database.pool.query(
      "select count(*)::int as tables from pg_publication_tables where pubname = 'crm_sync_mirror'",
    )
    expect(published.rows[0].tables).toBeGreaterThan(20)
  })

  it('exits non-zero when a migration fails', async () => {
    const database = await createTestDatabase({ empty: true })
    databases.push(database)
    await database.pool.query('create schema crm')
    const run = runCli(['migrate'], { cwd: await workdir(), env: { ...crm, DATABASE_URL: database.url } })
    expect(await run.exited).toBe(1)
    expect(run.output()).toContain('migration 0001_mirror failed')
  })
})
