// The status page over HTTP (src/http/page): signed in by the login form's HttpOnly, SameSite=Strict
// cookie or a bearer token, nothing for anybody else; forms posted from another origin refused; a
// resync and a cancel from its buttons go through the admin API's paths. The browser test
// (test/browser/) drives the same page in chromium against a running engine.
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/config/index.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createStatusPage } from '../../src/http/page/routes.ts'
import { createLogger } from '../../src/log.ts'
import { collectStatus } from '../../src/status/engine-status.ts'
import { prepareBudget } from '../../src/store/budget.ts'
import { createDeliveryReplay } from '../../src/store/delivery-replays.ts'
import { readRun } from '../../src/store/runs.ts'
import { type JobQueue, sendDeliveryReplay, startJobQueue } from '../../src/sync/job-queue.ts'
import { mirroredResources, sweepEnqueuer } from '../../src/sync/runs.ts'
import { useTestDatabase } from '../support/database.ts'

const TOKEN = 'admin-token-0123456789abcdef'
const ORIGIN = 'http://crm-sync.test'
const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const config = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' })
let boss: JobQueue
let app: Hono
let closePage: () => Promise<void> = async () => {}

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger)
  const runs = { db: database.db, enqueue: sweepEnqueuer(boss), reservationEnabled: false }
  const page = createStatusPage({
    token: TOKEN,
    db: database.db,
    runs,
    status: () => collectStatus({ db: database.db, boss, config }),
    hooks: () => ({ state: 'off' }),
    refusedKeys: () => new Map([['crm', 'crm refused the key: 401']]),
    intervalSeconds: 300,
    databaseUrl: database.url,
    sendReplay: (trx, replayId) => sendDeliveryReplay(boss, trx, replayId),
    logger,
  })
  closePage = page.close
  app = createHttpApp({ db: database.db, expectedMigrations: 1, routes: [page.routes] })
})

afterAll(async () => {
  await closePage()
  await boss?.stop({ graceful: false })
})

const get = (path: string, headers: Record<string, string> = {}) =>
  app.request(`${ORIGIN}${path}`, { headers: { accept: 'text/html', ...headers } })
const post = (
  path: string,
  form: Record<string, string> | [string, string][],
  headers: Record<string, string> = {},
) =>
  app.request(`${ORIGIN}${path}`, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })

async function signIn(): Promise<string> {
  const response = await post('/login', { token: TOKEN })
  expect(response.status).toBe(303)
  const cookie = response.headers.get('set-cookie') ?? ''
  return cookie.split(';')[0] as string
}

describe('the status page', () => {
  it('sends a browser that is not signed in to the form, and any other client a 401', async () => {
    const browser = await get('/')
    expect(browser.status).toBe(303)
    expect(browser.headers.get('location')).toBe('/login')
    const client = await app.request(`${ORIGIN}/runs`)
    expect(client.status).toBe(401)
    expect(await client.json()).toMatchObject({ error: expect.stringMatching(/sign in at \/login/) })
  })

  it('refuses a wrong token, and signs in with the right one by a cookie that is not the token', async () => {
    const wrong = await post('/login', { token: 'not-the-token' })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toMatch(/not the admin token/)

    const right = await post('/login', { token: TOKEN })
    expect(right.status).toBe(303)
    const cookie = right.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Strict/)
    expect(cookie).not.toContain(TOKEN)
    const page = await get('/', { cookie: cookie.split(';')[0] as string })
    expect(page.status).toBe(200)
    const body = await page.text()
    for (const resource of mirroredResources({ reservationEnabled: false }))
      expect(body).toContain(`data-table="${resource.name}"`)
  })

  it('takes the token as a bearer token too, and a session no more after sign-out', async () => {
    expect((await get('/', { authorization: `Bearer ${TOKEN}` })).status).toBe(200)
    const cookie = await signIn()
    const out = await post('/logout', {}, { cookie })
    expect(out.status).toBe(303)
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/)
  })

  it('refuses a form posted from another origin, and starts nothing', async () => {
    const cookie = await signIn()
    const before = await database.db.selectFrom('sync.runs').select('id').execute()
    const forged = await post('/runs', { mode: 'full' }, { cookie, origin: 'https://elsewhere.example' })
    expect(forged.status).toBe(403)
    const signInForged = await post('/login', { token: TOKEN }, { origin: 'https://elsewhere.example' })
    expect(signInForged.status).toBe(403)
    expect(await database.db.selectFrom('sync.runs').select('id').execute()).toHaveLength(before.length)
  })

  it('starts a resync of one table from its button, shows the run, and cancels it', async () => {
    const cookie = await signIn()
    const started = await post('/runs', { resource: 'crm.people', mode: 'incremental' }, { cookie })
    expect(started.status).toBe(303)
    const location = started.headers.get('location') ?? ''
    const id = Number(/^\/runs\/(\d+)\?notice=started$/.exec(location)?.[1])
    expect(await readRun(database.db, id)).toMatchObject({ requested_by: 'page', mode: 'incremental' })

    const shown = await (await get(location, { cookie })).text()
    expect(shown).toContain('Run started.')
    expect(shown).toContain('data-table="crm.people"')

    const again = await post('/runs', { resource: 'crm.people', mode: 'incremental' }, { cookie })
    expect(again.headers.get('location')).toBe(`/runs/${id}?notice=covered`)

    const cancelled = await post(`/runs/${id}/cancel`, {}, { cookie })
    expect(cancelled.headers.get('location')).toBe(`/runs/${id}?notice=cancelled`)
    expect(await readRun(database.db, id)).toMatchObject({ status: 'failed' })
    const list = await (await get('/runs', { cookie })).text()
    expect(list).toContain(`data-run="${id}" data-status="failed"`)
  })

  it('shows each upstream budget in use and a refused key', async () => {
    await prepareBudget(database.db, 'crm', 50)
    const body = await (await get('/', { authorization: `Bearer ${TOKEN}` })).text()
    const row = /<tr data-upstream="crm">([\s\S]*?)<\/tr>/.exec(body)?.[1] ?? ''
    expect(row).toMatch(/0 of 50/)
    expect(row).toMatch(/refused.*crm refused the key: 401/s)
  })

  it("shows the details pass's progress over people", async () => {
    const body = await (await get('/', { authorization: `Bearer ${TOKEN}` })).text()
    const row = /<tr data-details="crm.people">([\s\S]*?)<\/tr>/.exec(body)?.[1] ?? ''
    expect(row).toMatch(/crm\.historic_events, crm\.assistants/)
    expect(row).toMatch(/at most 10% of the budget/)
    expect(row).toMatch(/0 of 0 \(100%\)/)
  })

  it("serves pg-boss's dashboard under /jobs, signed in only", async () => {
    expect((await get('/jobs')).headers.get('location')).toBe('/login')
    const cookie = await signIn()
    const jobs = await get('/jobs', { cookie })
    expect(jobs.status).toBe(200)
    expect(await jobs.text()).toContain('pg-boss Dashboard')
    // The overview lists only some queues (which ones depends on their jobs); the queues page all.
    const queues = await get('/jobs/queues', { cookie })
    expect(queues.status).toBe(200)
    const body = await queues.text()
    expect(body).toMatch(/resource-sweep/)
    expect(body).toMatch(/record-refresh/)
  })

  it('answers a resync of a table it does not mirror with a 400 that names it', async () => {
    const cookie = await signIn()
    const response = await post('/runs', { resource: 'crm.nothing' }, { cookie })
    expect(response.status).toBe(400)
    expect(await response.text()).toMatch(/crm\.nothing/)
  })

  describe('deliveries', () => {
    /** A delivery kept in the inbox as it was left: its status, and what it was kept with. */
    async function kept(row: {
      status: 'rejected' | 'failed' | 'processed'
      payload: unknown
      reason?: string
      error?: string
      headers?: Record<string, string>
    }): Promise<number> {
      const inserted = await database.db
        .insertInto('sync.inbox')
        .values({
          model: 'person',
          event: 'update',
          shape: row.status === 'rejected' ? null : 'lean',
          record_id: row.status === 'rejected' ? null : 7,
          payload: JSON.stringify(row.payload),
          body: null,
          status: row.status,
          reason: row.reason ?? null,
          error: row.error ?? null,
          headers: row.headers ? JSON.stringify(row.headers) : null,
          attempts: row.status === 'failed' ? 20 : 1,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      return inserted.id
    }
    const lean = { model: 'person', event: 'update', record_id: 7 }
    const inbox = (id: number) =>
      database.db.selectFrom('sync.inbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

    it('lists them newest first, filtered by outcome, and refuses a filter it cannot read', async () => {
      const cookie = await signIn()
      const failed = await kept({ status: 'failed', payload: lean, error: 'the database went away' })
      const rejected = await kept({
        status: 'rejected',
        payload: { hello: 1 },
        reason: 'unknown payload shape',
      })
      const all = await (await get('/deliveries', { cookie })).text()
      expect(all.indexOf(`data-delivery="${rejected}"`)).toBeLessThan(
        all.indexOf(`data-delivery="${failed}"`),
      )
      const onlyRejected = await (await get('/deliveries?outcome=rejected&model=person', { cookie })).text()
      expect(onlyRejected).toContain(`data-delivery="${rejected}" data-outcome="rejected"`)
      expect(onlyRejected).not.toContain(`data-delivery="${failed}"`)
      const bad = await get('/deliveries?since=yesterday', { cookie })
      expect(bad.status).toBe(400)
      expect(await bad.text()).toMatch(/since must be a date and time/)
    })

    it('replays a failed one into the queue, its attempts cleared, and shows its payload and headers', async () => {
      const cookie = await signIn()
      const id = await kept({
        status: 'failed',
        payload: lean,
        error: 'the database went away',
        headers: { 'user-agent': 'CRM-Webhooks/1.0', authorization: '•••' },
      })
      const shown = await (await get(`/deliveries/${id}`, { cookie })).text()
      expect(shown).toContain('&quot;record_id&quot;: 7')
      expect(shown).toMatch(/<th scope="row">user-agent<\/th><td>CRM-Webhooks\/1.0<\/td>/)
      expect(shown).toMatch(/<th scope="row">authorization<\/th><td>•••<\/td>/)
      const older = await kept({ status: 'failed', payload: lean, error: 'before headers were kept' })
      expect(await (await get(`/deliveries/${older}`, { cookie })).text()).toContain('Not kept')
      const replayed = await post(`/deliveries/${id}/replay`, {}, { cookie })
      expect(replayed.headers.get('location')).toBe(`/deliveries/${id}?notice=queued`)
      expect(await inbox(id)).toMatchObject({ status: 'accepted', attempts: 0, error: null })
    })

    it('reads a rejected one again: queued once it reads as a delivery, still rejected otherwise', async () => {
      const cookie = await signIn()
      const readable = await kept({
        status: 'rejected',
        payload: lean,
        reason: 'a shape an older crm-sync refused',
      })
      await post(`/deliveries/${readable}/replay`, {}, { cookie })
      expect(await inbox(readable)).toMatchObject({
        status: 'accepted',
        shape: 'lean',
        record_id: 7,
        reason: null,
      })

      const unreadable = await kept({ status: 'rejected', payload: { hello: 1 }, reason: 'old reason' })
      const again = await post(`/deliveries/${unreadable}/replay`, {}, { cookie })
      expect(again.headers.get('location')).toBe(`/deliveries/${unreadable}?notice=rejected`)
      expect(await inbox(unreadable)).toMatchObject({
        status: 'rejected',
        reason: expect.stringMatching(/unknown payload shape/),
      })
    })

    describe('replay of every rejected or failed delivery since a time', () => {
      const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString().slice(0, 16)
      const replays = () =>
        database.db.selectFrom('sync.delivery_replays').selectAll().orderBy('id').execute()
      const jobsOf = (replayId: number) => boss.findJobs('delivery-replay', { data: { replayId } })

      it('creates a replay and its job, lists its progress, and cancels it', async () => {
        const cookie = await signIn()
        await kept({ status: 'failed', payload: lean, error: 'gone' })
        await kept({ status: 'rejected', payload: { hello: 1 }, reason: 'unknown payload shape' })
        const since = hourAgo()
        const { n: covered } = await database.db
          .selectFrom('sync.inbox')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', 'in', ['rejected', 'failed'])
          .where('received_at', '>=', new Date(`${since}Z`))
          .executeTakeFirstOrThrow()
        const before = (await replays()).length
        const form: [string, string][] = [
          ['since', since],
          ['statuses', 'rejected'],
          ['statuses', 'failed'],
        ]
        const created = await post('/deliveries/replays', form, { cookie })
        expect(created.status).toBe(303)
        expect(created.headers.get('location')).toBe('/deliveries')
        const replay = (await replays()).at(-1)
        expect((await replays()).length).toBe(before + 1)
        expect(replay).toMatchObject({
          since: new Date(`${since}Z`),
          statuses: ['rejected', 'failed'],
          state: 'running',
          total: Number(covered),
          done: 0,
        })
        const id = replay?.id as number
        expect(await jobsOf(id)).toHaveLength(1)

        const list = await (await get('/deliveries', { cookie })).text()
        const row = new RegExp(`<tr data-replay="${id}" data-state="running">([\\s\\S]*?)</tr>`).exec(
          list,
        )?.[1]
        expect(row).toContain(`0 of ${covered}`)
        expect(row).toContain(`action="/deliveries/replays/${id}/cancel"`)

        const cancelled = await post(`/deliveries/replays/${id}/cancel`, {}, { cookie })
        expect(cancelled.status).toBe(303)
        expect((await replays()).at(-1)).toMatchObject({ id, state: 'cancelled' })
        const after = await (await get('/deliveries', { cookie })).text()
        expect(after).toContain(`data-replay="${id}" data-state="cancelled"`)
        expect(after).not.toContain(`/deliveries/replays/${id}/cancel`)
        expect((await post('/deliveries/replays/999999/cancel', {}, { cookie })).status).toBe(404)
      })

      it('creates or cancels nothing for a form from another origin, and refuses one without a status', async () => {
        const cookie = await signIn()
        const before = await replays()
        const forged = await post(
          '/deliveries/replays',
          [
            ['since', hourAgo()],
            ['statuses', 'failed'],
          ],
          { cookie, origin: 'https://elsewhere.example' },
        )
        expect(forged.status).toBe(403)
        const none = await post('/deliveries/replays', { since: hourAgo() }, { cookie })
        expect(none.status).toBe(400)
        expect(await none.text()).toMatch(/statuses must name rejected, failed or both/)
        expect(await replays()).toEqual(before)

        const running = await createDeliveryReplay(database.db, { since: new Date(), statuses: ['failed'] })
        const forgedCancel = await post(
          `/deliveries/replays/${running.id}/cancel`,
          {},
          { cookie, origin: 'https://elsewhere.example' },
        )
        expect(forgedCancel.status).toBe(403)
        expect((await replays()).at(-1)).toMatchObject({ id: running.id, state: 'running' })
      })
    })

    it('replays nothing for a form posted from another origin', async () => {
      const cookie = await signIn()
      const id = await kept({ status: 'failed', payload: lean, error: 'gone' })
      const forged = await post(
        `/deliveries/${id}/replay`,
        {},
        { cookie, origin: 'https://elsewhere.example' },
      )
      expect(forged.status).toBe(403)
      expect(await inbox(id)).toMatchObject({ status: 'failed' })
    })
  })
})
