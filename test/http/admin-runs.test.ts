// The run history in the admin API: GET /admin/runs (newest first, paged with `before`, filtered by
// status and resource, a bad query a 400 naming it), POST /admin/runs/:id/cancel (200 with the run,
// 404, 409 once finished; a running sweep stops at its next checkpoint and the sweep waiting for its
// resource starts), and run ids that refused requests do not consume. The sweeps' jobs are kept in
// memory here, for the test to hand to a sweep handler.
import { randomUUID } from 'node:crypto'
import type { Hono } from 'hono'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createAdminApi } from '../../src/http/admin.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { abandonSweep, claimSweep, finishSweep, type SweepJob } from '../../src/store/runs.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { logger, sandboxConfig, sweepDeps, tappedPeople } from '../sync/support.ts'

const TOKEN = 'admin-token-0123456789abcdef'
const authorized = { authorization: `Bearer ${TOKEN}` }
const database = useTestDatabase()
let sandbox: Sandbox
let app: Hono
const jobs: SweepJob[] = []

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: { people: 200 },
    behaviour: { crmRateLimit: null, maxPerpage: 20 },
  })
  const admin = createAdminApi({
    token: TOKEN,
    db: database.db,
    runs: { db: database.db, enqueue: async (_trx, job) => void jobs.push(job), reservationEnabled: false },
    status: async () => ({}) as never,
    logger,
  })
  app = createHttpApp({ db: database.db, expectedMigrations: 1, routes: [admin] })
})
afterAll(async () => {
  await sandbox?.stop()
})

// Each test starts with free resources and no jobs.
beforeEach(async () => {
  const open = await database.db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('status', 'in', ['queued', 'running'])
    .execute()
  for (const sweep of open)
    await abandonSweep(database.db, async () => {}, sweep.run_id, sweep.resource, 'test over')
  jobs.length = 0
})

type Json = Record<string, unknown>
interface RunJson extends Json {
  id: number
  status: string
  error: string | null
  resources: { resource: string; status: string; error: string | null; pages: number; waiting: boolean }[]
}

async function call(path: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> {
  const response = await app.request(path, {
    ...init,
    headers: { ...authorized, 'content-type': 'application/json' },
  })
  return { status: response.status, body: (await response.json()) as Json }
}

async function resync(resources: string[], mode: 'full' | 'incremental' = 'incremental'): Promise<number> {
  const { status, body } = await call('/admin/resync', {
    method: 'POST',
    body: JSON.stringify({ resources, mode }),
  })
  expect(status).toBe(202)
  return body.run_id as number
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

const list = async (query = '') => {
  const { status, body } = await call(`/admin/runs${query}`)
  expect(status, JSON.stringify(body)).toBe(200)
  return body as { runs: RunJson[]; next_before: number | null }
}
const ids = (page: { runs: RunJson[] }) => page.runs.map((run) => run.id)

describe('GET /admin/runs', () => {
  it('lists the runs newest first with their sweeps, pages with before, and filters', async () => {
    const succeeded = await resync(['crm.deals'])
    await endSweep(succeeded, 'crm.deals', { status: 'succeeded' })
    const failed = await resync(['crm.people', 'crm.tasks'])
    await endSweep(failed, 'crm.people', { status: 'succeeded' })
    await endSweep(failed, 'crm.tasks', { status: 'failed', error: 'the CRM answered 503' })
    const queued = await resync(['crm.tasks'], 'full')

    const all = await list()
    expect(ids(all).slice(0, 3)).toEqual([queued, failed, succeeded])
    expect(all.next_before).toBeNull()
    // each run as GET /admin/runs/:id shows it
    const one = await call(`/admin/runs/${failed}`)
    expect(all.runs[1]).toEqual(one.body)
    expect(all.runs[1]).toMatchObject({
      status: 'failed',
      error: 'crm.tasks: the CRM answered 503',
      resources: [
        { resource: 'crm.people', status: 'succeeded' },
        { resource: 'crm.tasks', status: 'failed' },
      ],
    })

    const first = await list('?limit=2')
    expect(ids(first)).toEqual([queued, failed])
    expect(first.next_before).toBe(failed)
    const second = await list(`?limit=2&before=${first.next_before}`)
    expect(ids(second)[0]).toBe(succeeded)

    expect(ids(await list('?status=failed'))).toEqual([failed])
    expect(ids(await list('?status=queued,failed'))).toEqual([queued, failed])
    expect(ids(await list('?resource=crm.tasks'))).toEqual([queued, failed])
    expect(ids(await list('?resource=crm.tasks&status=failed'))).toEqual([failed])
    expect(await list('?resource=crm.users')).toEqual({ runs: [], next_before: null })
  })

  it('takes at most 100 runs a page, and 20 by default', async () => {
    for (let i = 0; i < 22; i += 1) {
      const runId = await resync(['crm.users'])
      await endSweep(runId, 'crm.users', { status: 'succeeded' })
    }
    const page = await list()
    expect(page.runs).toHaveLength(20)
    expect(page.next_before).toBe(page.runs.at(-1)?.id)
    expect(ids(page)).toEqual([...ids(page)].sort((a, b) => b - a))
    expect((await list('?limit=100')).runs.length).toBeGreaterThanOrEqual(22)
  })

  const bad: [string, RegExp][] = [
    ['?limit=0', /limit must be 1 or more/],
    ['?limit=101', /limit must be 100 or less/],
    ['?limit=ten', /limit must be a whole number/],
    ['?limit=-1', /limit/],
    ['?before=0', /before must be a run id/],
    ['?before=abc', /before must be a run id/],
    ['?status=done', /status must be queued, running, succeeded, failed/],
    ['?status=', /status/],
    ['?resource=crm.nothing', /resource must name a resource/],
    ['?page=2', /unknown parameter "page"/],
    ['?limit=5&limit=6', /"limit" is given more than once/],
  ]
  it.each(bad)('answers 400 with a reason for %s', async (query, reason) => {
    const { status, body } = await call(`/admin/runs${query}`)
    expect(status).toBe(400)
    expect(body.error).toMatch(reason)
  })

  it('needs the admin token', async () => {
    expect((await app.request('/admin/runs')).status).toBe(401)
    expect((await app.request('/admin/runs/1/cancel', { method: 'POST' })).status).toBe(401)
  })
})

describe('POST /admin/runs/:id/cancel', () => {
  it('ends the unfinished sweeps as failed: 200 with the run, then 409; 404 and 400 for no run', async () => {
    const runId = await resync(['crm.companies', 'crm.deals', 'crm.projects'])
    await endSweep(runId, 'crm.companies', { status: 'succeeded' })
    await claimSweep(database.db, { runId, resource: 'crm.deals', lease: 'worker' })

    const cancelled = await call(`/admin/runs/${runId}/cancel`, { method: 'POST' })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({
      id: runId,
      status: 'failed',
      error: 'crm.deals: cancelled by admin; crm.projects: cancelled by admin',
      finished_at: expect.any(String),
      resources: [
        { resource: 'crm.companies', status: 'succeeded', error: null },
        { resource: 'crm.deals', status: 'failed', error: 'cancelled by admin' },
        { resource: 'crm.projects', status: 'failed', error: 'cancelled by admin' },
      ],
    })
    expect((await call(`/admin/runs/${runId}`)).body).toEqual(cancelled.body)

    const again = await call(`/admin/runs/${runId}/cancel`, { method: 'POST' })
    expect(again.status).toBe(409)
    expect(again.body.error).toContain('already finished')
    expect(again.body.run).toEqual(cancelled.body)

    const unknown = await call('/admin/runs/987654321/cancel', { method: 'POST' })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toContain('987654321')
    expect((await call('/admin/runs/abc/cancel', { method: 'POST' })).status).toBe(400)
    expect((await call(`/admin/runs/${runId}/cancel`)).status).toBe(405)
  })

  it('stops a running sweep at its next checkpoint and starts the sweep waiting for its resource', async () => {
    const runId = await resync(['crm.people'], 'full')
    expect(jobs).toEqual([{ runId, resource: 'crm.people' }])
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let reachedPage2: () => void = () => {}
    const atPage2 = new Promise<void>((resolve) => {
      reachedPage2 = resolve
    })
    const pagesRead: number[] = []
    const handler = createSweepHandler(
      sweepDeps(database.db, sandboxConfig(sandbox), {
        wrap: tappedPeople(async (page) => {
          pagesRead.push(page)
          if (page === 2) {
            reachedPage2()
            await held
          }
        }),
      }),
    )
    const sweeping = handler([{ id: 'job-1', data: jobs[0], signal: new AbortController().signal }])
    await atPage2
    // Page 1 is written while page 2 is fetched: the cancel comes once it has committed.
    await waitFor(
      async () =>
        ((await call(`/admin/runs/${runId}`)).body as RunJson).resources[0]?.pages ? true : undefined,
      10_000,
      'page 1 written',
    )
    const waiting = await resync(['crm.people']) // waits for the running sweep
    const cancelled = await call(`/admin/runs/${runId}/cancel`, { method: 'POST' })
    expect(cancelled.status).toBe(200)
    const sweep = (cancelled.body as RunJson).resources[0]
    expect(sweep).toMatchObject({ status: 'failed', error: 'cancelled by admin', pages: 1 })
    // the sweep that waited for the resource has its job now
    expect(jobs).toEqual([
      { runId, resource: 'crm.people' },
      { runId: waiting, resource: 'crm.people' },
    ])
    expect(((await call(`/admin/runs/${waiting}`)).body as RunJson).resources[0]?.waiting).toBe(false)

    release()
    await sweeping // returns at its next checkpoint: it lost its lease
    // of 10: the page read ahead while page 2 was applied is the last one
    expect(Math.max(...pagesRead)).toBeLessThanOrEqual(3)
    const after = (await call(`/admin/runs/${runId}`)).body as RunJson
    expect(after.status).toBe('failed')
    expect(after.resources[0]).toEqual(sweep)
  })
})

describe('run ids', () => {
  it('are not consumed by refused requests', async () => {
    const first = await resync(['crm.projects'], 'full')
    const refused: [unknown, number][] = [
      [{ resources: ['crm.projects'], mode: 'full' }, 409],
      [{ resources: ['crm.projects'] }, 409], // an incremental request: the queued run covers it
      [{ resources: ['crm.nothing'] }, 400],
      [{ resources: ['reservations.contacts'] }, 400],
      [{ resources: [] }, 400],
      [{ mode: 'partial' }, 400],
      ['{', 400],
    ]
    for (const [body, status] of refused) {
      const response = await call('/admin/resync', {
        method: 'POST',
        body: typeof body === 'string' ? body : JSON.stringify(body),
      })
      expect(response.status, JSON.stringify(body)).toBe(status)
    }
    await call(`/admin/runs/${first}/cancel`, { method: 'POST' })
    expect(await resync(['crm.projects'], 'full')).toBe(first + 1)
  })
})
