// The admin API as DESIGN.md's outside contract states it: bearer ADMIN_TOKEN, POST /admin/resync
// (202, 409 with the running run's id, 400 naming the problem), GET /admin/runs/:id, GET /admin/status,
// and nothing at all (404) without a token. No worker runs here, so the sweeps it starts stay queued.
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import type { Hono } from 'hono'
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createAdminApi } from '../../src/http/admin.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createLogger } from '../../src/log.ts'
import { resources } from '../../src/resources/index.ts'
import { collectStatus } from '../../src/status/engine-status.ts'
import { UNFINISHED_STATES } from '../../src/store/runs/states.ts'
import { claimSweep, finishSweep } from '../../src/store/runs.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { sweepEnqueuer } from '../../src/sync/runs.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'

const TOKEN = 'admin-token-0123456789abcdef'
const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const config = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' })
const crmResources = resources.filter((resource) => resource.service === 'crm').map((r) => r.name)
let boss: JobQueue
let app: Hono

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger)
  const admin = createAdminApi({
    token: TOKEN,
    db: database.db,
    runs: { db: database.db, enqueue: sweepEnqueuer(boss), reservationEnabled: false },
    status: () => collectStatus({ db: database.db, boss, config }),
    logger,
  })
  app = createHttpApp({ db: database.db, expectedMigrations: 1, routes: [admin] })
})

afterAll(async () => {
  await boss?.stop({ graceful: false })
})

// Each test starts without unfinished sweeps: the ones a previous test queued are ended, those that
// hold their resource first (ending one sends the sweep waiting for it).
beforeEach(async () => {
  const open = await database.db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('state', 'in', UNFINISHED_STATES)
    .orderBy(sql`state = 'waiting'`)
    .orderBy('run_id')
    .execute()
  for (const sweep of open) await endSweep(sweep.run_id, sweep.resource, { status: 'succeeded' })
})

async function endSweep(
  runId: number,
  resource: string,
  end: { status: 'succeeded' } | { status: 'failed'; error: string },
) {
  const key = { runId, resource, lease: randomUUID() }
  await claimSweep(database.db, key)
  await finishSweep(database.db, async () => {}, key, end)
}

const authorized = { authorization: `Bearer ${TOKEN}` }

function resync(body?: unknown, headers: Record<string, string> = authorized) {
  return app.request('/admin/resync', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>
}

describe('authorization', () => {
  const requests: [string, string][] = [
    ['POST', '/admin/resync'],
    ['GET', '/admin/runs/1'],
    ['GET', '/admin/status'],
    ['GET', '/admin/no-such-thing'],
    ['GET', '/admin'],
  ]
  const wrong: Record<string, Record<string, string>> = {
    'no header': {},
    'a wrong token': { authorization: 'Bearer admin-token-0123456789abcdeX' },
    'a shorter token': { authorization: 'Bearer admin' },
    'a longer token': { authorization: `Bearer ${TOKEN}${TOKEN}` },
    'another scheme': { authorization: `Basic ${TOKEN}` },
    'the token alone': { authorization: TOKEN },
    'an empty bearer': { authorization: 'Bearer ' },
  }

  it.each(Object.keys(wrong))('answers 401 to every admin path with %s', async (name) => {
    for (const [method, path] of requests) {
      const response = await app.request(path, { method, headers: wrong[name] })
      expect(response.status, `${method} ${path}`).toBe(401)
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/)
      expect(JSON.stringify(await response.json())).not.toContain(TOKEN)
    }
  })

  it('takes the scheme in any case and an unknown admin path is then a 404', async () => {
    const response = await app.request('/admin/status', { headers: { authorization: `bearer ${TOKEN}` } })
    expect(response.status).toBe(200)
    expect((await app.request('/admin/no-such-thing', { headers: authorized })).status).toBe(404)
  })

  it('is off without ADMIN_TOKEN: every /admin path is a 404, whatever the header', async () => {
    const off = createHttpApp({ db: database.db, expectedMigrations: 1, routes: [] })
    for (const [method, path] of requests) {
      expect((await off.request(path, { method, headers: authorized })).status).toBe(404)
      expect((await off.request(path, { method })).status).toBe(404)
    }
  })
})

describe('POST /admin/resync', () => {
  it('starts a run of every enabled resource and answers 202 with its id', async () => {
    const response = await resync({})
    expect(response.status).toBe(202)
    const body = await json(response)
    expect(Object.keys(body)).toEqual(['run_id'])
    expect(body.run_id).toEqual(expect.any(Number))
    expect(response.headers.get('location')).toBe(`/admin/runs/${body.run_id}`)
    const run = await json(await app.request(`/admin/runs/${body.run_id}`, { headers: authorized }))
    expect(run).toMatchObject({
      id: body.run_id,
      mode: 'incremental',
      status: 'queued',
      requested_by: 'admin',
    })
    expect((run.resources as { resource: string }[]).map((sweep) => sweep.resource)).toEqual(
      [...crmResources].sort(),
    )
    const jobs = await boss.findJobs(QUEUES.sweep.name, { data: { runId: body.run_id } })
    expect(jobs).toHaveLength(crmResources.length)
  })

  it('takes no body at all as the defaults, and a full run of chosen resources', async () => {
    const defaults = await app.request('/admin/resync', { method: 'POST', headers: authorized })
    expect(defaults.status).toBe(202)
    const { run_id: first } = await json(defaults)
    await endSweeps(first as number)

    const full = await resync({ resources: ['crm.people', 'crm.deals'], mode: 'full' })
    expect(full.status).toBe(202)
    const run = await json(
      await app.request(`/admin/runs/${(await json(full)).run_id}`, { headers: authorized }),
    )
    expect(run).toMatchObject({
      mode: 'full',
      resources: [
        { resource: 'crm.deals', status: 'queued', records: 0, remote_count: null },
        { resource: 'crm.people', status: 'queued', records: 0, remote_count: null },
      ],
    })
  })

  it('accepts a full resync while a routine sweep runs: 202, queued until the sweep lets go', async () => {
    const routine = await json(await resync({ resources: ['crm.people'] }))
    await database.db
      .updateTable('sync.run_resources')
      .set({ status: 'running', started_at: new Date() })
      .where('run_id', '=', routine.run_id as number)
      .execute()
    const response = await resync({ resources: ['crm.deals', 'crm.people'], mode: 'full' })
    expect(response.status).toBe(202)
    const accepted = await json(response)
    expect(accepted).toMatchObject({ waiting: ['crm.people'] })
    const run = await json(await app.request(`/admin/runs/${accepted.run_id}`, { headers: authorized }))
    expect(run).toMatchObject({
      status: 'queued',
      resources: [
        { resource: 'crm.deals', status: 'queued', waiting: false },
        { resource: 'crm.people', status: 'queued', waiting: true },
      ],
    })
  })

  it("answers 409 with the run's id when a full run of the same resources is queued or running", async () => {
    const first = await json(await resync({ resources: ['crm.deals', 'crm.people'], mode: 'full' }))
    const runsBefore = await database.db.selectFrom('sync.runs').select('id').execute()
    const response = await resync({ resources: ['crm.people', 'crm.deals'], mode: 'full' })
    expect(response.status).toBe(409)
    expect(response.headers.get('location')).toBe(`/admin/runs/${first.run_id}`)
    const body = await json(response)
    expect(body).toMatchObject({ run_id: first.run_id })
    expect(body.error).toContain(`run ${first.run_id}`)
    // nothing was started for the request
    expect(await database.db.selectFrom('sync.runs').select('id').execute()).toHaveLength(runsBefore.length)
  })

  it('accepts a new run once the previous one has finished', async () => {
    const first = await json(await resync({ resources: ['crm.tasks'], mode: 'full' }))
    expect((await resync({ resources: ['crm.tasks'], mode: 'full' })).status).toBe(409)
    await endSweeps(first.run_id as number)
    expect((await resync({ resources: ['crm.tasks'], mode: 'full' })).status).toBe(202)
  })

  const invalid: [string, unknown, RegExp][] = [
    ['malformed JSON', '{"resources": [', /not valid JSON/],
    ['a list instead of an object', '[]', /JSON object/],
    ['a string instead of an object', '"crm.people"', /JSON object/],
    ['null', 'null', /JSON object/],
    ['an unknown key', { resource: ['crm.people'] }, /resource/],
    ['an unknown mode', { mode: 'partial' }, /mode .*"full" or "incremental"/],
    ['resources that are no list', { resources: 'crm.people' }, /resources must be a list/],
    ['a resource that is no string', { resources: [42] }, /resources\.0 /],
    ['no resources', { resources: [] }, /no resources/],
    ['an unknown resource', { resources: ['crm.people', 'crm.nothing'] }, /unknown resource crm\.nothing/],
    ['a child table', { resources: ['crm.tags'] }, /unknown resource crm\.tags/],
    ['a switched-off service', { resources: ['reservations.contacts'] }, /reservations\.contacts is off/],
  ]

  it.each(invalid)('answers 400 naming the problem for %s', async (_name, body, message) => {
    const response = await resync(body)
    expect(response.status).toBe(400)
    expect((await json(response)).error).toMatch(message)
  })

  it('answers 413 to a body over 64 KiB and 405 to other methods', async () => {
    const huge = { resources: Array.from({ length: 10_000 }, () => 'crm.people') }
    expect((await resync(huge)).status).toBe(413)
    const get = await app.request('/admin/resync', { headers: authorized })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
  })

  it('never answers 500, whatever the body', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          fc.record({
            resources: fc.oneof(fc.array(fc.constantFrom(...crmResources, 'x', '')), fc.anything()),
            mode: fc.oneof(fc.constantFrom('full', 'incremental'), fc.anything()),
          }),
        ),
        async (body) => {
          const response = await resync(body === undefined ? 'undefined' : body)
          expect([202, 400, 409]).toContain(response.status)
          if (response.status === 202) await endSweeps((await json(response)).run_id as number)
        },
      ),
      { numRuns: 60 },
    )
  })
})

async function endSweeps(runId: number) {
  const sweeps = await database.db
    .selectFrom('sync.run_resources')
    .select('resource')
    .where('run_id', '=', runId)
    .execute()
  for (const { resource } of sweeps) await endSweep(runId, resource, { status: 'succeeded' })
}

describe('GET /admin/runs/:id', () => {
  it('shows a finished run with its sweeps, times in ISO 8601', async () => {
    const { run_id: runId } = await json(await resync({ resources: ['crm.people', 'crm.users'] }))
    await endSweep(runId as number, 'crm.people', { status: 'succeeded' })
    await endSweep(runId as number, 'crm.users', { status: 'failed', error: 'the CRM answered 503' })
    const response = await app.request(`/admin/runs/${runId}`, { headers: authorized })
    expect(response.status).toBe(200)
    const run = await json(response)
    const isoTime = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(run).toMatchObject({
      id: runId,
      status: 'failed',
      started_at: isoTime,
      finished_at: isoTime,
      error: 'crm.users: the CRM answered 503',
      resources: [
        { resource: 'crm.people', status: 'succeeded', records: 0, remote_count: null, error: null },
        { resource: 'crm.users', status: 'failed', error: 'the CRM answered 503', finished_at: isoTime },
      ],
    })
  })

  it('answers 404 for an unknown run and 400 for what is no run id', async () => {
    const unknown = await app.request('/admin/runs/987654321', { headers: authorized })
    expect(unknown.status).toBe(404)
    expect((await json(unknown)).error).toContain('987654321')
    for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999', '1e3']) {
      const response = await app.request(`/admin/runs/${id}`, { headers: authorized })
      expect(response.status, id).toBe(400)
      expect((await json(response)).error).toMatch(/run id/)
    }
  })
})

describe('GET /admin/status', () => {
  it('reports every enabled resource, its sweep under way, the queues and the inbox', async () => {
    const { run_id: runId } = await json(await resync({ resources: ['crm.companies'] }))
    const response = await app.request('/admin/status', { headers: authorized })
    expect(response.status).toBe(200)
    const status = (await response.json()) as {
      resources: { resource: string; active_sweep: unknown; live_rows: number }[]
      queues: Record<string, { queued: number; active: number; failed: number }>
      inbox: Record<string, number>
      inbox_bytes: number
    }
    expect(status.resources.map((resource) => resource.resource)).toEqual(crmResources)
    const companies = status.resources.find((resource) => resource.resource === 'crm.companies')
    expect(companies).toMatchObject({
      live_rows: 0,
      active_sweep: { run_id: runId, status: 'queued', records: 0, pages: 0 },
    })
    expect(Object.keys(status.queues).sort()).toEqual(
      Object.values(QUEUES)
        .map((q) => q.name)
        .sort(),
    )
    for (const counts of Object.values(status.queues)) {
      expect(counts).toMatchObject({ queued: expect.any(Number), active: expect.any(Number) })
    }
    expect(status.inbox).toEqual({ accepted: 0, rejected: 0, processed: 0, failed: 0 })
    expect(status.inbox_bytes).toBeGreaterThan(0)
  })
})

describe('the running service', () => {
  let sandbox: Sandbox | undefined
  let engine: Engine | undefined
  let own: TestDatabase | undefined
  afterEach(async () => {
    await engine?.stop()
    await sandbox?.stop()
    if (own) await dropTestDatabase(own)
    engine = sandbox = own = undefined
  })

  async function startWith(env: Record<string, string>) {
    sandbox = await startSandbox({ seedSize: 25, behaviour: { crmRateLimit: null } })
    own = await createTestDatabase()
    engine = await startEngine(sandbox, own.url, env)
    return `http://127.0.0.1:${engine.port}`
  }

  it('has no admin API and no status page without ADMIN_TOKEN', async () => {
    const base = await startWith({})
    for (const path of ['/admin/status', '/admin/runs/1', '/', '/login', '/runs', '/deliveries', '/jobs']) {
      expect((await fetch(`${base}${path}`, { headers: authorized })).status).toBe(404)
    }
    const post = await fetch(`${base}/admin/resync`, { method: 'POST', headers: authorized, body: '{}' })
    expect(post.status).toBe(404)
  })

  it('runs a forced full resync to its end, and the status then shows the mirror in sync', async () => {
    const base = await startWith({ ADMIN_TOKEN: TOKEN })
    const call = (path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { ...authorized, 'content-type': 'application/json' } })
    // the start-up incremental run may still hold the resource: a 409 names it, and it ends
    const resync = await waitFor(
      async () => {
        const response = await call('/admin/resync', {
          method: 'POST',
          body: JSON.stringify({ resources: ['crm.people', 'crm.deals'], mode: 'full' }),
        })
        if (response.status === 409) expect((await json(response)).run_id).toEqual(expect.any(Number))
        return response.status === 202 ? json(response) : undefined
      },
      20_000,
      'the resync to be accepted',
    )
    const run = await waitFor(
      async () => {
        const body = await json(await call(`/admin/runs/${resync.run_id}`))
        return body.status === 'succeeded' || body.status === 'failed' ? body : undefined
      },
      30_000,
      'the run to end',
    )
    expect(run).toMatchObject({
      status: 'succeeded',
      mode: 'full',
      resources: [
        { resource: 'crm.deals', status: 'succeeded', remote_count: 25, records: 25 },
        { resource: 'crm.people', status: 'succeeded', remote_count: 25, records: 25 },
      ],
    })
    const status = (await json(await call('/admin/status'))) as {
      resources: { resource: string; live_rows: number; drift: number | null; last_run: unknown }[]
    }
    const people = status.resources.find((resource) => resource.resource === 'crm.people')
    expect(people).toMatchObject({
      live_rows: 25,
      drift: 0,
      last_run: { id: resync.run_id, mode: 'full', status: 'succeeded' },
    })
    expect(status.resources.map((resource) => resource.resource)).toContain('reservations.contacts')
  })
})
