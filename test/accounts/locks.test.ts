// The advisory locks of accounts: one account's hook registration, or its sweep of a table, never waits
// for another account's; registrations of one process take turns a few at a time, so that many
// accounts registering at once cannot hold every connection of the pool.
import { describe, expect, it } from 'vitest'
import type { Hook } from '../../src/api-client/crm.ts'
import { type HooksApi, registerHooks } from '../../src/hooks/registration.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
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

describe('the locks of accounts', () => {
  const database = useTestDatabase()

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

  it('take registrations of one process three at a time', async () => {
    const held = ['a', 'b', 'c', 'd'].map((name) => ({ name, crm: heldCrm() }))
    const running = held.map(({ name, crm }) =>
      registerHooks(forAccount(database.db, accountSchemas(name)), crm.api, settings),
    )
    // Three hold a transaction each while their CRM keeps them waiting; the fourth has not begun.
    await waitFor(
      async () => (held.filter(({ crm }) => crm.asked.listed).length === 3 ? true : undefined),
      5_000,
      'three registrations under way',
    )
    expect(held.map(({ crm }) => crm.asked.listed)).toEqual([true, true, true, false])
    for (const { crm } of held) crm.open()
    await Promise.all(running)
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
