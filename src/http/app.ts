// The HTTP surface: health and readiness; the receiver, the admin API and /metrics are mounted here.
import { Hono } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { sql } from 'kysely'
import type { Logger } from '../log.ts'
import { relationOf } from '../store/account-schemas.ts'
import type { Db } from '../store/database.ts'
import { appliedMigrationCount } from '../store/migrate.ts'
import { isTransientDatabaseError } from '../sync/sweep/sweep-resource.ts'
import { carriesToken } from './bearer.ts'

export interface HttpDependencies {
  db: Db
  /** Number of migrations this build ships; readiness requires the database to have applied them all. */
  expectedMigrations: number
  /** The connections of each account, whose schemas must have applied them (default: `db`'s). */
  migrated?: Db[]
  /** Further readiness checks by name (e.g. the job queue); each throws when not ready. */
  readiness?: Record<string, () => Promise<void>>
  /** States reported by /readyz that do not decide readiness (e.g. whether hooks are registered). */
  reports?: Record<string, () => unknown>
  /** Sub-applications mounted at the root (the webhook receiver, the admin API, /metrics). */
  routes?: Hono[]
  /**
   * ADMIN_TOKEN: /readyz shows why a check failed, and the reports, only to a request that carries it
   * (they quote upstream answers); to anybody else, the status and which checks passed.
   */
  adminToken?: string | null
  logger?: Logger
}

type Check = { ok: true } | { ok: false; error: string }

async function check(probe: () => Promise<void>): Promise<Check> {
  try {
    await probe()
    return { ok: true }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

export function createHttpApp({
  db,
  expectedMigrations,
  migrated = [db],
  readiness = {},
  reports = {},
  routes = [],
  adminToken = null,
  logger,
}: HttpDependencies): Hono {
  const app = new Hono()
  for (const route of routes) app.route('/', route)

  app.get('/healthz', (c) => c.json({ status: 'ok' }))

  app.get('/readyz', async (c) => {
    const database = await check(async () => {
      await sql`select 1`.execute(db)
    })
    const migrations = database.ok
      ? await check(async () => {
          for (const account of migrated) {
            const applied = await appliedMigrationCount(account)
            if (applied < expectedMigrations)
              throw new Error(
                `${applied} of ${expectedMigrations} migrations applied${migrated.length > 1 ? ` in ${relationOf(account, 'sync')}` : ''}`,
              )
          }
        })
      : ({ ok: false, error: 'database unreachable' } as const)
    const others = Object.fromEntries(
      await Promise.all(
        Object.entries(readiness).map(async ([name, probe]) => [name, await check(probe)] as const),
      ),
    )
    const checks = { database, migrations, ...others }
    const ready = Object.values(checks).every((result) => result.ok)
    const status = ready ? 'ready' : 'not ready'
    const code = ready ? 200 : 503
    if (!adminToken || !carriesToken(c, adminToken)) {
      const passed = Object.fromEntries(
        Object.entries(checks).map(([name, result]) => [name, { ok: result.ok }]),
      )
      return c.json({ status, checks: passed }, code)
    }
    const reported = Object.fromEntries(Object.entries(reports).map(([name, report]) => [name, report()]))
    return c.json({ status, checks, reports: reported }, code)
  })

  app.notFound((c) => c.json({ error: 'not found' }, 404))
  // Never an internal message (it may name hosts and ports): a database that went away is a 503 the
  // caller may retry, anything else (but a middleware's own refusal) a bare 500, logged here.
  app.onError((error, c) => {
    // A refusal a middleware decided (hono's csrf: a form posted from another origin is a 403).
    if (error instanceof HTTPException) return error.getResponse()
    if (isTransientDatabaseError(error)) {
      return c.json({ error: 'the database is unavailable; try again shortly' }, 503, { 'Retry-After': '5' })
    }
    logger?.error({ err: error, path: c.req.path }, 'request failed')
    return c.json({ error: 'internal error' }, 500)
  })
  return app
}
