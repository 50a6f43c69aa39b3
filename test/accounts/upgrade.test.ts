// A deployment without ACCOUNTS_FILE upgrades with nothing to do (docs/accounts.md): on a database
// migrated as the release before several accounts left it, a start changes no object of the mirror,
// history or engine schemas, records no migration, makes no schema of an account, keeps the queues'
// and the hooks' names, and mirrors into the schemas it always had.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { QUEUES } from '../../src/sync/job-queue.ts'
import { objectsOf } from '../support/catalog.ts'
import { createTestDatabase } from '../support/database.ts'
import { ENGINE_SECRET, startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { runEnded } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()

describe('a deployment without ACCOUNTS_FILE', () => {
  it('starts on its database as it did, with the same schemas, queues and hooks', async () => {
    const upstream = rig.sandbox(
      await startSandbox({ seedSize: 10, behaviour: { crmRateLimit: null, reservationRateLimit: null } }),
    )
    const database = rig.database(await createTestDatabase())
    const schemas = async () =>
      (
        await sql<{ name: string }>`
          select nspname as name from pg_namespace
          where nspname not like 'pg\\_%' and nspname not in ('information_schema', 'public') order by 1`.execute(
          database.db,
        )
      ).rows.map((row) => row.name)
    const migrations = async () =>
      (await sql<{ name: string }>`select name from sync.kysely_migration order by name`.execute(database.db))
        .rows
    const before = {
      objects: await objectsOf(database.db, null),
      schemas: await schemas(),
      migrations: await migrations(),
    }
    expect(before.schemas).toEqual([
      'crm',
      'crm_live',
      'history',
      'pgboss',
      'reservations',
      'reservations_live',
      'sync',
    ])

    const engine = rig.engine(await startEngine(upstream, database.url, { CRM_RATE_LIMIT: '1000' }))
    expect((await runEnded(database.db, 1, 30_000)).status).toBe('succeeded')
    expect(await differences(database.db, upstream, { reservation: true })).toEqual([])

    expect(await objectsOf(database.db, null)).toEqual(before.objects)
    expect(await migrations()).toEqual(before.migrations)
    expect(await schemas()).toEqual(before.schemas)
    const queues = await sql<{ name: string }>`select name from pgboss.queue order by name`.execute(
      database.db,
    )
    // (pg-boss's own queue for its schedules, __pgboss__send-it, aside.)
    expect(queues.rows.map((row) => row.name).filter((name) => !name.startsWith('__pgboss'))).toEqual(
      Object.values(QUEUES)
        .map((queue) => queue.name)
        .sort(),
    )
    await waitFor(
      async () => (upstream.control.crm.hooks().length === 12 ? true : undefined),
      10_000,
      'hooks',
    )
    for (const hook of upstream.control.crm.hooks())
      expect(String(hook.target_url).startsWith(`${engine.publicUrl}/webhooks/crm/${ENGINE_SECRET}/`)).toBe(
        true,
      )
  })
})
