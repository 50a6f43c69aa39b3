// The HTTP surface: health and readiness now; the receiver, admin API and metrics mount here later.
import { Hono } from 'hono'
import { sql } from 'kysely'
import type { Db } from '../store/database.ts'
import { appliedMigrationCount } from '../store/migrate.ts'

export interface HttpDependencies {
  db: Db
  /** Number of migrations this build ships; readiness requires the database to have applied them all. */
  expectedMigrations: number
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

export function createHttpApp({ db, expectedMigrations }: HttpDependencies): Hono {
  const app = new Hono()

  app.get('/healthz', (c) => c.json({ status: 'ok' }))

  app.get('/readyz', async (c) => {
    const database = await check(async () => {
      await sql`select 1`.execute(db)
    })
    const migrations = database.ok
      ? await check(async () => {
          const applied = await appliedMigrationCount(db)
          if (applied < expectedMigrations)
            throw new Error(`${applied} of ${expectedMigrations} migrations applied`)
        })
      : ({ ok: false, error: 'database unreachable' } as const)
    const ready = database.ok && migrations.ok
    return c.json(
      { status: ready ? 'ready' : 'not ready', checks: { database, migrations } },
      ready ? 200 : 503,
    )
  })

  app.notFound((c) => c.json({ error: 'not found' }, 404))
  app.onError((error, c) => c.json({ error: 'internal error', detail: error.message }, 500))
  return app
}
