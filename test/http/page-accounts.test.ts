// The status page of several accounts (ACCOUNTS_FILE): accounts made by createAccount over one test
// database, each migrated into its own schemas, and their pages composed as the service composes them
// (statusPages). At `/` the accounts side by side, the worst first; each account's page under
// /accounts/<name>/ shows its tables and rows only, and every link and form of it stays there; its
// resync button starts a run in its schemas only; one sign-in, at /login, admits to all of them.
import type { Hono } from 'hono'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AccountParts, createAccount } from '../../src/account.ts'
import { accountConfig } from '../../src/config/account-config.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { type StatusPages, statusPages } from '../../src/http/page/accounts.ts'
import { createLogger } from '../../src/log.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import type { Db } from '../../src/store/database.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { readRun } from '../../src/store/runs.ts'
import { writeResourceState } from '../../src/store/sync-state.ts'
import { type JobQueue, startJobQueue } from '../../src/sync/job-queue.ts'
import { mirroredResources } from '../../src/sync/runs.ts'
import { useTestDatabase } from '../support/database.ts'

const TOKEN = 'admin-token-0123456789abcdef'
const ORIGIN = 'http://crm-sync.test'
// In the file's order; the index shows them the worst first: south (never synced), east (late), north.
const NAMES = ['north', 'south', 'east'] as const
type Name = (typeof NAMES)[number]

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const deployment = parseConfig({
  CRM_BASE_URL: 'http://127.0.0.1:1',
  CRM_API_KEY: 'unused-key',
  ADMIN_TOKEN: TOKEN,
})
const crmTables = mirroredResources({ reservationEnabled: false }).map((resource) => resource.name)
let boss: JobQueue
let app: Hono
let pages: StatusPages | undefined
const accounts = {} as Record<Name, AccountParts>
const dbs = {} as Record<Name, Db>

/** The account `name` as the service makes it (its schemas migrated or not). */
const account = (name: string) =>
  createAccount(
    accountConfig(deployment, {
      name,
      schemas: accountSchemas(name),
      crm: { baseUrl: `http://127.0.0.1:1/${name}`, apiKey: `${name}-crm-key-0001`, rateLimit: null },
      reservation: null,
      webhookSecret: null,
      webhookSecretPrevious: null,
    }),
    { db: database.db, boss, databaseUrl: database.url, logger, processMetrics: false },
  )

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger, NAMES)
  for (const name of NAMES) {
    dbs[name] = forAccount(database.db, accountSchemas(name))
    await migrateToLatest(dbs[name])
    accounts[name] = account(name)
  }
  // north: every table swept just now, two people, one failed delivery. east: every table swept
  // one and a half intervals ago (late). south: never synced (every table in error), its key refused.
  const interval = deployment.incrementalSyncIntervalSeconds
  for (const table of crmTables) {
    await writeResourceState(dbs.north, table, { last_incremental_sync_at: new Date() })
    const lateSince = new Date(Date.now() - (1.5 * interval + Math.min(interval, 60)) * 1000)
    await writeResourceState(dbs.east, table, { last_incremental_sync_at: lateSince })
  }
  await sql`insert into crm.people (id, name) values (1, 'Ada of north'), (2, 'Bo of north')`.execute(
    dbs.north,
  )
  await sql`insert into sync.inbox (model, event, status, error, attempts)
    values ('person', 'update', 'failed', 'gone', 20)`.execute(dbs.north)
  accounts.south.upstreamMetrics.authFailures.set('crm', {
    status: 401,
    message: 'the key south-crm-key is not valid',
    at: new Date(),
  })
  pages = statusPages(Object.values(accounts), { token: TOKEN, publicUrl: null, logger })
  app = createHttpApp({ db: database.db, expectedMigrations: 1, routes: pages.routes })
}, 60_000)

afterAll(async () => {
  await pages?.close()
  await boss?.stop({ graceful: false })
})

const get = (path: string, headers: Record<string, string> = {}) =>
  app.request(`${ORIGIN}${path}`, { headers: { accept: 'text/html', ...headers } })
const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  app.request(`${ORIGIN}${path}`, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded', ...headers },
  })
const bearer = { authorization: `Bearer ${TOKEN}` }

async function signIn(): Promise<string> {
  const response = await post('/login', { token: TOKEN })
  expect(response.status).toBe(303)
  expect(response.headers.get('location')).toBe('/')
  const cookie = response.headers.get('set-cookie') ?? ''
  expect(cookie).toMatch(/Path=\//)
  return cookie.split(';')[0] as string
}

/** Every link and form target of a page (but the icon, `data:,`). */
const targets = (body: string) =>
  [...body.matchAll(/(?:href|action)="([^"]*)"/g)]
    .map((match) => match[1] as string)
    .filter((target) => !target.startsWith('data:'))

/** The row of the table `id` whose `attribute` is `value`. */
const row = (body: string, attribute: string, value: string) =>
  new RegExp(`<tr ${attribute}="${value}"[^>]*>([\\s\\S]*?)</tr>`).exec(body)?.[1] ?? ''

describe('the status page of several accounts', () => {
  it('lists the accounts at / side by side, the worst first', async () => {
    const response = await get('/', bearer)
    expect(response.status).toBe(200)
    const body = await response.text()
    const shown = [...body.matchAll(/<tr data-account="(\w+)" data-state="([^"]+)">/g)].map((match) => [
      match[1],
      match[2],
    ])
    expect(shown).toEqual([
      ['south', 'error'],
      ['east', 'late'],
      ['north', 'on time'],
    ])
    const tables = crmTables.length
    expect(row(body, 'data-account', 'south')).toContain(`${tables} in error of ${tables} tables`)
    expect(row(body, 'data-account', 'south')).toMatch(
      /refused.*crm refused the API key at .*: the key south-crm-key is not valid/s,
    )
    expect(row(body, 'data-account', 'east')).toContain(`${tables} late of ${tables} tables`)
    const north = row(body, 'data-account', 'north')
    expect(north).toContain('<a href="/accounts/north/">north</a>')
    expect(north).toContain(`all ${tables} tables on time`)
    expect(north).toMatch(/<td class="number">2<\/td>/) // live rows: its two people
    expect(north).toContain('<a class="error" href="/accounts/north/deliveries?outcome=failed">1</a>')
    expect(north).toMatch(/accepted<\/td>\s*<td>off, reason PUBLIC_URL is not set<\/td>/)
  })

  it('shows an account whose status cannot be read among the worst, and the others as they are', async () => {
    // west's schemas were never made: its status fails.
    const withWest = statusPages([...Object.values(accounts), account('west')], {
      token: TOKEN,
      publicUrl: null,
      logger,
    })
    const other = createHttpApp({ db: database.db, expectedMigrations: 1, routes: withWest.routes })
    const response = await other.request(`${ORIGIN}/`, { headers: bearer })
    expect(response.status).toBe(200)
    const body = await response.text()
    const shown = [...body.matchAll(/<tr data-account="(\w+)" data-state="([^"]+)">/g)].map(
      (match) => match[1],
    )
    expect(shown).toEqual(['south', 'west', 'east', 'north'])
    expect(row(body, 'data-account', 'west')).toContain('its status could not be read (see the logs)')
  })

  it("shows each account's own tables and rows on its page, every link and form under its path", async () => {
    for (const name of NAMES) {
      const response = await get(`/accounts/${name}/`, bearer)
      expect(response.status, name).toBe(200)
      const body = await response.text()
      expect(body).toContain(`<span id="account">${name}</span>`)
      const people = row(body, 'data-table', 'crm.people')
      expect(people).toMatch(new RegExp(`<td class="number">${name === 'north' ? 2 : 0}</td>`))
      const expected = { north: 'on time', south: 'error', east: 'late' }[name]
      expect(body).toContain(`<tr data-table="crm.people" data-state="${expected}">`)
      expect(body).not.toContain('data-table="reservations.')
      const elsewhere = targets(body).filter(
        (target) => !target.startsWith(`/accounts/${name}/`) && target !== '/' && target !== '/logout',
      )
      expect(elsewhere, name).toEqual([])
      expect(targets(body)).toContain(`/accounts/${name}/runs`)
    }
    const deliveries = await (await get('/accounts/north/deliveries', bearer)).text()
    expect(deliveries).toMatch(/href="\/accounts\/north\/deliveries\/\d+"/)
    expect(targets(deliveries).filter((target) => target.startsWith('/deliveries'))).toEqual([])
    // The account's path without its slash leads to its page.
    const bare = await get('/accounts/north', bearer)
    expect(bare.headers.get('location')).toBe('/accounts/north/')
  })

  it("starts a resync from north's page in north's schemas only, and shows its run there", async () => {
    const started = await post('/accounts/north/runs', { mode: 'full' }, bearer)
    expect(started.status).toBe(303)
    const location = started.headers.get('location') ?? ''
    const id = Number(/^\/accounts\/north\/runs\/(\d+)\?notice=started$/.exec(location)?.[1])
    expect(await readRun(dbs.north, id)).toMatchObject({ requested_by: 'page', mode: 'full' })
    for (const db of [dbs.south, dbs.east, database.db]) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from sync.runs`.execute(db)
      expect(rows[0]?.n).toBe(0)
    }
    const queues = await sql<{ name: string }>`
      select distinct name from pgboss.job where name like '%resource-sweep'`.execute(database.db)
    expect(queues.rows.map((job) => job.name)).toEqual(['north/resource-sweep'])

    const run = await (await get(location, bearer)).text()
    expect(run).toContain('Run started.')
    expect(run).toContain(`action="/accounts/north/runs/${id}/cancel"`)
    expect(run).toContain('<a href="/accounts/north/runs">All runs</a>')
    const again = await post('/accounts/north/runs', { mode: 'full' }, bearer)
    expect(again.headers.get('location')).toBe(`/accounts/north/runs/${id}?notice=covered`)
    const cancelled = await post(`/accounts/north/runs/${id}/cancel`, {}, bearer)
    expect(cancelled.headers.get('location')).toBe(`/accounts/north/runs/${id}?notice=cancelled`)
    const list = await (await get('/accounts/north/runs', bearer)).text()
    expect(list).toContain(`<a href="/accounts/north/runs/${id}">`)
    expect(await (await get('/accounts/south/runs', bearer)).text()).not.toContain(`data-run="${id}"`)
  })

  it("admits to every account's pages with one sign-in at /login, and to none without", async () => {
    for (const path of ['/', '/accounts/north/', '/accounts/south/runs', '/accounts/east/deliveries']) {
      const response = await get(path)
      expect(response.status, path).toBe(303)
      expect(response.headers.get('location'), path).toBe('/login')
    }
    // The sign-in is at the root only.
    expect((await post('/accounts/north/login', { token: TOKEN })).status).toBe(404)
    expect((await get('/login')).status).toBe(200)

    const cookie = await signIn()
    for (const path of ['/', '/accounts/north/', '/accounts/south/runs', '/accounts/east/deliveries'])
      expect((await get(path, { cookie })).status, path).toBe(200)
    const forged = await post(
      '/accounts/south/runs',
      { mode: 'full' },
      { cookie, origin: 'https://elsewhere.example' },
    )
    expect(forged.status).toBe(403)
    const out = await post('/logout', {}, { cookie })
    expect(out.headers.get('location')).toBe('/login')
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/)
  })

  it("serves pg-boss's dashboard under each account's path", async () => {
    const cookie = await signIn()
    expect((await get('/accounts/east/jobs')).headers.get('location')).toBe('/login')
    const queues = await get('/accounts/east/jobs/queues', { cookie })
    expect(queues.status).toBe(200)
    const body = await queues.text()
    expect(body).toContain('east/resource-sweep')
    expect(body).toContain('/accounts/east/jobs/')
  })
})
