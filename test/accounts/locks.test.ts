// The locks of accounts: one account's hook registration, or its sweep of a table, never waits for
// another account's; registrations hold no connection while they wait on the CRM, so that many
// accounts registering at once cannot hold every connection of the pool.
import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Hook } from '../../src/api-client/crm.ts'
import { type HooksApi, registerHooks } from '../../src/hooks/registration.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { lockResources } from '../../src/store/runs/locks.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'

const settings = {
  publicUrl: 'https://sync.example.com',
  secret: 'a-secret-0123456789',
  objectType: 'lean' as const,
}

/** A CRM whose hooks index answers once `open` is called; hooks it is asked to create are kept. */
function heldCrm() {
  let open = () => {}
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  const created: unknown[] = []
  const asked = { listed: false }
  const api: HooksApi = {
    listHooks: async () => {
      asked.listed = true
      await opened
      return [] as Hook[]
    },
    createHook: async (hook) => {
      created.push(hook)
      return { id: created.length } as unknown as Hook
    },
    deleteHook: async () => 'deleted' as const,
  }
  return { api, open, created, asked }
}

const ACCOUNTS = ['north', 'south', 'east', 'west']

describe('the locks of accounts', () => {
  const database = useTestDatabase()
  beforeAll(async () => {
    for (const name of ACCOUNTS) await migrateToLatest(forAccount(database.db, accountSchemas(name)))
  }, 60_000)

  it('let one account register its hooks while another’s registration holds its lock', async () => {
    const south = heldCrm()
    const southRegistering = registerHooks(
      forAccount(database.db, accountSchemas('south')),
      south.api,
      settings,
    )
    const north = heldCrm()
    north.open()
    const result = await registerHooks(forAccount(database.db, accountSchemas('north')), north.api, settings)
    expect(result.created.length).toBeGreaterThan(0)
    expect(south.created).toEqual([])
    south.open()
    await southRegistering
    expect(south.created.length).toBe(result.created.length)
  })

  it('hold no connection while registrations wait on the CRM, however many accounts register', async () => {
    const pool = createPool(database.url, { max: 2 })
    const db = createDb(pool)
    try {
      const held = ACCOUNTS.map((name) => ({ name, crm: heldCrm() }))
      const running = held.map(({ name, crm }) =>
        registerHooks(forAccount(db, accountSchemas(name)), crm.api, settings),
      )
      // Four accounts' registrations wait on their CRMs at once, on a pool of two connections,
      // and the pool still answers.
      await waitFor(
        async () => (held.every(({ crm }) => crm.asked.listed) ? true : undefined),
        5_000,
        'every registration asking its CRM',
      )
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db)
      expect(rows).toEqual([{ one: 1 }])
      for (const { crm } of held) crm.open()
      const results = await Promise.all(running)
      expect(results.map((result) => result.created.length)).toEqual(ACCOUNTS.map(() => 12))
    } finally {
      await db.destroy()
    }
  })

  it('take over a registration lease whose holder stopped renewing it', async () => {
    const north = forAccount(database.db, accountSchemas('north'))
    await sql`
      insert into sync.leases (name, holder, held_until)
      values ('hook-registration', 'a process that died', clock_timestamp() + interval '1 second')
      on conflict (name) do update set holder = excluded.holder, held_until = excluded.held_until
    `.execute(north)
    const { rows: leases } = await sql<{ until: Date }>`
      select held_until as until from sync.leases
    `.execute(north)
    const crm = heldCrm()
    crm.open()
    let listedAt = 0
    const api: HooksApi = {
      ...crm.api,
      listHooks: () => {
        listedAt ||= Date.now()
        return crm.api.listHooks()
      },
    }
    const result = await registerHooks(north, api, settings)
    expect(result.created).toHaveLength(12)
    // It waited for the lease (PostgreSQL's clock and this process's are the machine's).
    const until = leases[0]?.until
    expect(until).toBeInstanceOf(Date)
    expect(listedAt).toBeGreaterThanOrEqual((until as Date).getTime() - 50)
    const { rows } = await sql`select * from sync.leases`.execute(north)
    expect(rows).toEqual([])
  })

  it('let one account sweep a table while another account sweeps its own of the same name', async () => {
    const south = forAccount(database.db, accountSchemas('south'))
    const north = forAccount(database.db, accountSchemas('north'))
    await south.transaction().execute(async (southTrx) => {
      await lockResources(southTrx, ['crm.people'])
      const taken = await north.transaction().execute(async (northTrx) => {
        await lockResources(northTrx, ['crm.people'])
        return 'north took its lock'
      })
      expect(taken).toBe('north took its lock')
    })
  })
})
