// Conditions an operator meets in ordinary use (a refused key, a database out of reach, a port in use, a
// sweep that fails) are said in one line each: no stack trace, no object dumped, no log line repeating
// what the command's own line says. Stacks only at debug level. The commands run as child processes,
// against the sandbox and a test database; their stderr is a pipe, so log lines are JSON.
import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

let sandbox: Sandbox
let database: TestDatabase
let cwd: string

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null, reservationRateLimit: null } })
  database = await createTestDatabase()
  cwd = await workdir()
})
afterAll(async () => {
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  await removeWorkdirs()
})

/** The CRM of the sandbox with a key it refuses. */
const refused = (overrides: Record<string, string> = {}) => ({
  CRM_BASE_URL: sandbox.crmUrl,
  CRM_API_KEY: 'wrong-crm-key-0123',
  DATABASE_URL: database.url,
  CRM_RATE_LIMIT: '1000',
  ...overrides,
})

/** stderr without the two lines every command starts with (database, upstream). */
const said = (stderr: string) =>
  stderr
    .trim()
    .split('\n')
    .filter((line) => !/^(database|upstream): /.test(line))

const records = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { stack?: string } })

describe('a key the CRM refuses', () => {
  it('is one line of `hooks list`, naming the variable: its log lines only with --verbose', async () => {
    const { code, stdout, stderr } = await cli(['hooks', 'list'], refused(), cwd)
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(said(stderr)).toEqual([
      'crm-sync hooks: the CRM refused the API key in CRM_API_KEY (GET /api/hooks answered 401: not authorized)',
    ])
    expect(stderr).not.toContain('wrong-crm-key-0123')

    // --verbose shows the log lines of its requests, and LOG_LEVEL=debug the stack
    const verbose = await cli(['hooks', 'list', '--verbose'], refused({ LOG_LEVEL: 'debug' }), cwd)
    const lines = records(verbose.stderr)
    expect(lines.map((line) => line.msg)).toContain(
      'crm refused the API key: crm GET /api/hooks: not authorized (401): {"error":"not authorized","description":"not authorized"}',
    )
    expect(lines.find((line) => line.msg === 'hooks failed')?.err?.stack).toMatch(
      /^UpstreamAuthError: .*\n\s+at /,
    )
  })

  it('is the failed line of `check`, and the line under Hooks of `status`, with no log line repeating it', async () => {
    const check = await cli(['check'], refused(), cwd)
    expect(check.code).toBe(1)
    expect(check.stdout).toMatch(/^fail\s+crm\s+.*the key is refused: .*401/m)
    expect(said(check.stderr)).toEqual([])

    const status = await cli(['status'], refused(), cwd)
    expect(status.code, status.stderr).toBe(0)
    expect(status.stdout).toMatch(/^Hooks: could not be listed: .*not authorized \(401\)/m)
    expect(said(status.stderr)).toEqual([])
  })

  it('fails the sweeps of `resync --wait` as failed, with the reason, and logs no stack', async () => {
    const { code, stdout, stderr } = await cli(
      ['resync', '--wait', '--resource', 'crm.people'],
      refused(),
      cwd,
    )
    expect(code).toBe(1)
    expect(stderr).toMatch(
      /^crm\.people: failed before its first page, 0 records, \d+ s: crm GET \/api\/people.*401/m,
    )
    expect(stdout).toMatch(/crm\.people: crm GET \/api\/people.*not authorized \(401\)/)
    // The failed sweep, the run that ended: drawn above and summed up, not logged again with a stack.
    const logged = records(stderr)
    expect(logged.map((line) => line.msg)).not.toContain('sweep failed')
    expect(logged.map((line) => line.msg)).not.toContain('run finished')
    expect(stderr).not.toContain('"stack"')
  }, 60_000)
})

describe('crm-sync start', () => {
  it('says in one line that the database is out of reach: no error object, no stack unless debug', async () => {
    const port = await freePort()
    const env = refused({ DATABASE_URL: `postgres://someone:secret-password@127.0.0.1:${port}/nowhere` })
    const { code, stdout, stderr } = await cli(['start'], env, cwd)
    expect(code).toBe(1)
    const failed = records(stdout).filter((line) => line.level >= 50)
    expect(failed).toEqual([
      expect.objectContaining({
        msg: `start failed: cannot connect to the database at 127.0.0.1:${port}/nowhere: connection refused (is PostgreSQL running there?)`,
      }),
    ])
    expect(failed[0]).not.toHaveProperty('err')
    expect(stdout + stderr).not.toContain('"stack"')
    expect(stdout + stderr).not.toContain('secret-password')

    const debug = await cli(['start'], { ...env, LOG_LEVEL: 'debug' }, cwd)
    expect(records(debug.stdout).find((line) => line.msg === 'start failed')?.err?.stack).toMatch(
      /^DatabaseConnectionError: cannot connect/,
    )
  })

  it('says in one line that its port is in use', async () => {
    const server: Server = createServer()
    const port = await freePort()
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    try {
      const env = refused({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
      const { code, stdout } = await cli(['start'], env, cwd)
      expect(code).toBe(1)
      const failed = records(stdout).filter((line) => line.level >= 50)
      expect(failed.map((line) => line.msg)).toEqual([
        `start failed: port ${port} is in use by another process (set PORT, or stop that process)`,
      ])
      expect(stdout).not.toContain('"stack"')
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  }, 60_000)
})
