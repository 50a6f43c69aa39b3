// `crm-sync status` against a running engine: per resource counts and outcomes, hooks with their
// failure counts (secret masked), queues and inbox, as a table and as JSON; a CRM that cannot be
// reached leaves the rest of the status intact; and a running crm-sync's embedded database is joined.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { resourceNames } from '../../src/resources/index.ts'
import type { Status } from '../../src/status/engine-status.ts'
import { readRuns } from '../../src/store/runs.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { ENGINE_SECRET, type Engine, startEngine } from '../support/engine.ts'
import { readyStatus, runCli, waitFor } from '../support/process.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

type StatusJson = Status & { hooks: Record<string, unknown>[] | null; hooks_error: string | null }

let sandbox: Sandbox
let database: TestDatabase
let engine: Engine
let cwd: string
let env: Record<string, string>

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: 20,
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
  database = await createTestDatabase()
  cwd = await workdir()
  // No freshness polls: a test below counts the CRM's requests around `crm-sync status`.
  engine = await startEngine(sandbox, database.url, {
    CRM_RATE_LIMIT: '1000',
    RESERVATION_RATE_LIMIT: '1000',
    ACTIVITY_POLL_SECONDS: '0',
    RESERVATION_POLL_SECONDS: '0',
  })
  await waitFor(
    async () => {
      const runs = await readRuns(database.db)
      return runs.length > 0 && runs.every((run) => run.finished_at) ? true : undefined
    },
    30_000,
    'the first run',
  )
  env = {
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    RESERVATION_BASE_URL: sandbox.reservationUrl,
    RESERVATION_API_KEY: sandbox.reservationApiKey,
    DATABASE_URL: database.url,
    WEBHOOK_SECRET: ENGINE_SECRET, // the CLI scrubs it from its logs; the listing masks it anyway
  }
})
afterAll(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  await removeWorkdirs()
})

describe('crm-sync status --json', () => {
  it('reports every enabled resource, the hooks, the queues and the inbox', async () => {
    const { code, stdout, stderr } = await cli(['status', '--json'], env, cwd)
    expect(code, stderr).toBe(0)
    const status = JSON.parse(stdout) as StatusJson
    expect(status.resources.map((resource) => resource.resource)).toEqual(resourceNames)
    expect(status.resources.find((resource) => resource.resource === 'crm.people')).toMatchObject({
      live_rows: 20,
      remote_count: 20,
      drift: 0,
      last_run: { mode: 'incremental', status: 'succeeded' },
      active_sweep: null,
    })
    expect(status.hooks).toHaveLength(12)
    expect(status.hooks?.[0]).toMatchObject({ owner: 'crm-sync', failed: 0 })
    expect(stdout).not.toContain(ENGINE_SECRET)
    expect(status.hooks_error).toBeNull()
    expect(Object.keys(status.queues)).toContain('resource-sweep')
    expect(status.inbox).toEqual({ accepted: 0, rejected: 0, processed: 0, failed: 0 })
    expect(status.inbox_bytes).toBeGreaterThan(0)
  })

  it('asks the CRM nothing with --no-hooks', async () => {
    const before = sandbox.control.counters().crm.requests
    const { code, stdout, stderr } = await cli(['status', '--json', '--no-hooks'], env, cwd)
    expect(code, stderr).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({ hooks: null, hooks_error: null })
    expect(sandbox.control.counters().crm.requests).toBe(before)
  })

  it('still reports the mirror when the CRM cannot be reached', async () => {
    const { code, stdout } = await cli(
      ['status', '--json'],
      { ...env, CRM_BASE_URL: `http://127.0.0.1:${await freePort()}`, UPSTREAM_TIMEOUT_SECONDS: '2' },
      cwd,
    )
    expect(code).toBe(0)
    const status = JSON.parse(stdout) as StatusJson
    expect(status.hooks).toBeNull()
    expect(status.hooks_error).toBeTruthy()
    expect(status.resources).toHaveLength(resourceNames.length)
  })
})

describe('crm-sync status', () => {
  it('prints tables of resources, hooks and queues', async () => {
    const { code, stdout } = await cli(['status'], env, cwd)
    expect(code).toBe(0)
    expect(stdout).toMatch(
      /^resource\s+live rows\s+remote\s+drift\s+watermark\s+last incremental\s+last full\s+last run$/m,
    )
    expect(stdout).toMatch(
      /^crm\.people\s+20\s+20\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+\d+ s ago\s+.+#\d+ incremental succeeded \d+ s ago$/m,
    )
    expect(stdout).toContain('Hooks (12, no failures)')
    expect(stdout).toContain('/webhooks/crm/***/person/create')
    expect(stdout).toMatch(/^resource-sweep\s+\d+\s+\d+\s+\d+$/m)
    expect(stdout).toMatch(
      /^ {2}crm\.people \(crm\.historic_events, crm\.assistants\): [\d,]+ of [\d,]+ read and current; due: [\d,]+ never read, \d+ changed since, \d+ read before the last full run(?: \([\d,]+ failing, tried again later\))?; last read .+; pass (off|at most \d+% of the budget)$/m,
    )
    expect(stdout).toContain('Inbox: 0 deliveries waiting to be applied')
    expect(stdout).toMatch(/^Inbox: .*; \d+(\.\d)? (B|KiB|MiB|GiB|TiB) on disk$/m)
    expect(stdout).not.toContain(ENGINE_SECRET)
  })
})

describe('with the embedded database of a running crm-sync', () => {
  it('joins it instead of refusing the data folder that is in use', async () => {
    const folder = await workdir()
    const [port, databasePort] = [await freePort(), await freePort()]
    const crm = { CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey }
    const service = runCli(['start'], {
      cwd: folder,
      env: { ...crm, PORT: String(port), EMBEDDED_POSTGRES_PORT: String(databasePort), LOG_LEVEL: 'warn' },
    })
    try {
      await waitFor(() => readyStatus(port), 90_000, '/readyz').catch((error) => {
        throw new Error(`${error.message}\n${service.output()}`)
      })
      const { code, stdout, stderr } = await cli(['status', '--json', '--no-hooks'], crm, folder)
      // nothing but what it uses (the same cluster as the service)
      expect(stderr.trim().split('\n')).toEqual([
        `database: embedded PostgreSQL in ${folder}/.data (DATABASE_URL is not set)`,
        `upstream: CRM ${sandbox.crmUrl} (CRM_BASE_URL from the environment); reservation service off`,
      ])
      expect(code).toBe(0)
      expect((JSON.parse(stdout) as StatusJson).resources.map((r) => r.resource)).toEqual(
        resourceNames.filter((name) => name.startsWith('crm.')), // reservation sync is off
      )
    } finally {
      service.child.kill('SIGTERM')
      expect(await service.exited).toBe(0)
    }
  })
})
