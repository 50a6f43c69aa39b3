import { Hono } from 'hono'
import { afterAll, describe, expect, it } from 'vitest'
import { createHttpApp } from '../../src/http/app.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { migrationFileCount } from '../../src/store/migrate.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'

const database = useTestDatabase()
const TOKEN = 'admin-token-0123456789'
const others: TestDatabase[] = []
afterAll(async () => {
  await Promise.all(others.map(dropTestDatabase))
})

describe('health and readiness', () => {
  it('/healthz answers while the process is up', async () => {
    const app = createHttpApp({ db: database.db, expectedMigrations: 1 })
    const response = await app.request('/healthz')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
  })

  it('/readyz is 200 with the database reachable and migrated', async () => {
    const app = createHttpApp({ db: database.db, expectedMigrations: await migrationFileCount() })
    const response = await app.request('/readyz')
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ status: 'ready', checks: { database: { ok: true } } })
  })

  it('/readyz is 503 while migrations are missing', async () => {
    const empty = await createTestDatabase({ empty: true })
    others.push(empty)
    const app = createHttpApp({ db: empty.db, expectedMigrations: await migrationFileCount() })
    const response = await app.request('/readyz')
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({
      checks: { database: { ok: true }, migrations: { ok: false } },
    })
  })

  it('/readyz is 503 when the database is unreachable', async () => {
    const pool = createPool('postgres://nobody@127.0.0.1:1/none')
    const app = createHttpApp({ db: createDb(pool), expectedMigrations: 1 })
    const response = await app.request('/readyz')
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ status: 'not ready', checks: { database: { ok: false } } })
    await pool.end()
  })

  it('/readyz reports every further check by name and is 503 when one fails', async () => {
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: await migrationFileCount(),
      readiness: {
        jobs: async () => {},
        hooks: async () => {
          throw new Error('2 of 12 hooks missing')
        },
      },
      adminToken: TOKEN,
    })
    const response = await app.request('/readyz', { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({
      checks: { jobs: { ok: true }, hooks: { ok: false, error: '2 of 12 hooks missing' } },
    })
  })

  it('/readyz shows why, and the reports, only to the admin token (they quote upstream answers)', async () => {
    const leaky = 'the CRM answered 422: https://sync.example.com/webhooks/crm/secret-in-path/person'
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: await migrationFileCount(),
      readiness: {
        hooks: async () => {
          throw new Error(leaky)
        },
      },
      reports: { hooks: () => ({ state: 'failing', last_error: leaky }) },
      adminToken: TOKEN,
    })
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }]) {
      const response = await app.request('/readyz', { headers })
      expect(response.status).toBe(503)
      const text = await response.text()
      expect(text).not.toContain('secret-in-path')
      expect(JSON.parse(text)).toEqual({
        status: 'not ready',
        checks: { database: { ok: true }, migrations: { ok: true }, hooks: { ok: false } },
      })
    }
    const admin = await app.request('/readyz', { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(await admin.json()).toMatchObject({ reports: { hooks: { last_error: leaky } } })
  })

  it('answers 503 without internals when the database is down under a route, 500 without detail otherwise', async () => {
    const pool = createPool('postgres://nobody@127.0.0.1:1/none')
    const down = createDb(pool)
    const route = new Hono()
    route.get('/admin/things', async (c) => c.json(await down.selectFrom('sync.runs').selectAll().execute()))
    route.get('/broken', () => {
      throw new Error('secret internals at db.internal:5432')
    })
    const app = createHttpApp({ db: database.db, expectedMigrations: 1, routes: [route] })
    const unavailable = await app.request('/admin/things')
    expect(unavailable.status).toBe(503)
    const text = await unavailable.text()
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/)
    expect(JSON.parse(text)).toEqual({ error: 'the database is unavailable; try again shortly' })
    const broken = await app.request('/broken')
    expect(broken.status).toBe(500)
    expect(await broken.json()).toEqual({ error: 'internal error' })
    await pool.end()
  })

  it('answers unknown paths with a JSON 404', async () => {
    const app = createHttpApp({ db: database.db, expectedMigrations: 1 })
    const response = await app.request('/nothing-here')
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({ error: 'not found' })
  })
})
