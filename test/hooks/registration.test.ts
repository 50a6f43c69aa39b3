// Hook registration and deliveries against the sandbox: 12 hooks, idempotent, replaced when the
// object type or secret changes, foreign hooks untouched, replicas serialised; and deliveries of
// every shape arriving in the inbox with their jobs.
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { sql } from 'kysely'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { type CrmClient, createCrmClient, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { isOwnHook, maskTarget, registerHooks, removeHooks } from '../../src/hooks/registration.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createLogger } from '../../src/log.ts'
import { useTestDatabase } from '../support/database.ts'
import { receiverFor, SECRET } from '../support/receiver.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
let sandbox: Sandbox
let crm: CrmClient

beforeAll(async () => {
  sandbox = await startSandbox({ behaviour: { crmRateLimit: null } })
  crm = createCrmClient(
    {
      baseUrl: sandbox.crmUrl,
      apiKey: sandbox.crmApiKey,
      auth: 'header',
      requests: 10_000,
      windowSeconds: 10,
      timeoutSeconds: 10,
      maxRetries: 2,
      pageSize: 500,
      maxPages: 100,
    },
    { db: database.db, logger, metrics: createUpstreamMetrics() },
  )
})
afterAll(async () => {
  await sandbox?.stop()
})

const settings = (
  overrides: { objectType?: 'lean' | 'api' | 'nested' | 'flat'; secret?: string; publicUrl?: string } = {},
) => ({
  publicUrl: overrides.publicUrl ?? 'https://sync.example.com',
  secret: overrides.secret ?? SECRET,
  objectType: overrides.objectType ?? 'lean',
})

describe('hook registration', () => {
  beforeEach(async () => {
    for (const hook of await crm.listHooks()) await crm.deleteHook(hook.id)
  })

  it('creates exactly 12 hooks, then none on a second run; a foreign hook survives', async () => {
    await crm.createHook({
      model: 'person',
      event: 'update',
      target_url: 'https://other.example.com/hook',
      object_type: 'api',
    })
    const first = await registerHooks(database.db, crm, settings())
    expect(first.created).toHaveLength(12)
    expect(first.deleted).toHaveLength(0)
    const second = await registerHooks(database.db, crm, settings())
    expect(second).toMatchObject({ created: [], deleted: [] })
    expect(second.kept).toHaveLength(12)
    const hooks = await crm.listHooks()
    expect(hooks).toHaveLength(13)
    expect(hooks.filter((hook) => !isOwnHook(hook)).map((hook) => hook.target_url)).toEqual([
      'https://other.example.com/hook',
    ])
    const pairs = hooks.filter(isOwnHook).map((hook) => `${hook.model}:${hook.event}:${hook.object_type}`)
    expect(new Set(pairs).size).toBe(12)
  })

  it('never puts the API key into a target URL', async () => {
    await registerHooks(database.db, crm, settings())
    for (const hook of await crm.listHooks()) expect(hook.target_url).not.toContain(sandbox.crmApiKey)
  })

  it('replaces its hooks when the object type changes, with the includes the sync needs', async () => {
    await registerHooks(database.db, crm, settings({ objectType: 'lean' }))
    const changed = await registerHooks(database.db, crm, settings({ objectType: 'nested' }))
    expect(changed.created).toHaveLength(12)
    expect(changed.deleted).toHaveLength(12)
    const hooks = await crm.listHooks()
    expect(hooks).toHaveLength(12)
    const person = hooks.find((hook) => hook.model === 'person' && hook.event === 'update')
    expect(person).toMatchObject({ object_type: 'nested' })
    expect(person?.includes).toContain('tags')
  })

  it('replaces its hooks when the secret or the public URL changes', async () => {
    await registerHooks(database.db, crm, settings())
    const rotated = await registerHooks(database.db, crm, settings({ secret: 'another-secret-0123456789' }))
    expect(rotated.deleted).toHaveLength(12)
    const moved = await registerHooks(
      database.db,
      crm,
      settings({ secret: 'another-secret-0123456789', publicUrl: 'https://new.example.com/' }),
    )
    expect(moved.deleted).toHaveLength(12)
    const hooks = await crm.listHooks()
    expect(hooks).toHaveLength(12)
    expect(
      hooks.every((hook) =>
        hook.target_url?.startsWith('https://new.example.com/webhooks/crm/another-secret'),
      ),
    ).toBe(true)
  })

  it('registers once when two replicas start together', async () => {
    const results = await Promise.all([
      registerHooks(database.db, crm, settings()),
      registerHooks(database.db, crm, settings()),
    ])
    expect(results.map((result) => result.created.length).sort()).toEqual([0, 12])
    expect(await crm.listHooks()).toHaveLength(12)
  })

  it('sends a few requests at a time, every hook created before any is deleted', async () => {
    await registerHooks(database.db, crm, settings({ secret: 'old-secret-0123456789' }))
    let inFlight = 0
    let most = 0
    const order: string[] = []
    const counted =
      <A extends unknown[], R>(kind: string, call: (...args: A) => Promise<R>) =>
      async (...args: A) => {
        inFlight++
        most = Math.max(most, inFlight)
        try {
          return await call(...args)
        } finally {
          inFlight--
          order.push(kind)
        }
      }
    const api = {
      listHooks: counted('list', () => crm.listHooks()),
      createHook: counted('create', (hook: Parameters<CrmClient['createHook']>[0]) => crm.createHook(hook)),
      deleteHook: counted('delete', (id: Parameters<CrmClient['deleteHook']>[0]) => crm.deleteHook(id)),
    }
    const result = await registerHooks(database.db, api, settings())
    expect(result.created).toHaveLength(12)
    expect(result.deleted).toHaveLength(12)
    expect(most).toBeGreaterThan(1)
    expect(most).toBeLessThanOrEqual(4)
    expect(order.lastIndexOf('create')).toBeLessThan(order.indexOf('delete'))
    expect(await crm.listHooks()).toHaveLength(12)
  })

  it('fails only once every request it sent has ended, so none runs on after it', async () => {
    let inFlight = 0
    let first = true
    const api = {
      listHooks: () => crm.listHooks(),
      createHook: async (hook: Parameters<CrmClient['createHook']>[0]) => {
        inFlight++
        try {
          if (first) {
            first = false
            throw new Error('500 from the CRM')
          }
          return await crm.createHook(hook)
        } finally {
          inFlight--
        }
      },
      deleteHook: (id: Parameters<CrmClient['deleteHook']>[0]) => crm.deleteHook(id),
    }
    await expect(registerHooks(database.db, api, settings())).rejects.toThrow('500 from the CRM')
    expect(inFlight).toBe(0)
    expect(await crm.listHooks()).toHaveLength(11)
    // The next registration completes the set, with no duplicate.
    expect((await registerHooks(database.db, crm, settings())).created).toHaveLength(1)
    expect(await crm.listHooks()).toHaveLength(12)
  })

  it('deletes nothing once another process has taken its lease, and keeps what it created', async () => {
    await registerHooks(database.db, crm, settings({ secret: 'old-secret-0123456789' }))
    let taken = false
    const api = {
      listHooks: () => crm.listHooks(),
      createHook: async (hook: Parameters<CrmClient['createHook']>[0]) => {
        // The lease lapsed while this registration waited on the CRM, and another process took it.
        if (!taken) {
          taken = true
          await sql`update sync.leases set holder = 'another process',
            held_until = clock_timestamp() + interval '1 minute'`.execute(database.db)
        }
        return crm.createHook(hook)
      },
      deleteHook: async (id: Parameters<CrmClient['deleteHook']>[0]) => {
        throw new Error(`deleted hook ${id} without the lease`)
      },
    }
    try {
      await expect(registerHooks(database.db, api, settings())).rejects.toThrow(
        'another process took the hook registration lease',
      )
      expect(taken).toBe(true)
      // The old secret's twelve and the new ones: a moment of duplicates, never one of none.
      expect(await crm.listHooks()).toHaveLength(24)
    } finally {
      await sql`delete from sync.leases`.execute(database.db)
    }
  })

  it('removes only its own hooks', async () => {
    await crm.createHook({
      model: 'deal',
      event: 'create',
      target_url: 'https://other.example.com/deals',
      object_type: 'lean',
    })
    await registerHooks(database.db, crm, settings())
    const removed = await removeHooks(database.db, crm)
    expect(removed).toHaveLength(12)
    expect((await crm.listHooks()).map((hook) => hook.target_url)).toEqual([
      'https://other.example.com/deals',
    ])
  })

  it('masks the secret of a target URL for display', () => {
    expect(maskTarget(`https://sync.example.com/webhooks/crm/${SECRET}/person/update`)).toBe(
      'https://sync.example.com/webhooks/crm/***/person/update',
    )
  })
})

describe('deliveries from the sandbox', () => {
  let server: ReturnType<typeof serve>
  let publicUrl: string

  beforeAll(async () => {
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: 0,
      routes: [receiverFor(database.db).app],
    })
    server = await new Promise((resolve) => {
      const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started))
    })
    publicUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve))
  })

  it.each(['lean', 'nested', 'api', 'flat'] as const)(
    '%s deliveries end up as accepted inbox rows (their jobs)',
    async (objectType) => {
      for (const hook of await crm.listHooks()) await crm.deleteHook(hook.id)
      await registerHooks(database.db, crm, settings({ objectType, publicUrl }))
      const before = await database.db
        .selectFrom('sync.inbox')
        .select('id')
        .orderBy('id', 'desc')
        .executeTakeFirst()

      const person = sandbox.control.crm.create('people', { name: 'Mustermann', first_name: 'Maxi' })
      sandbox.control.crm.update('people', person.id as number, { first_name: 'Max' })
      const deal = sandbox.control.crm.create('deals', {
        name: 'Deal',
        value: '10.00',
        value_type: 'Total',
        value_count: '1',
        target_date: '2026-12-31',
      })
      sandbox.control.crm.destroy('deals', deal.id as number)
      await sandbox.control.drainDeliveries()

      const rows = await database.db
        .selectFrom('sync.inbox')
        .selectAll()
        .where('id', '>', before?.id ?? 0)
        .orderBy('id')
        .execute()
      expect(rows.map((row) => [row.model, row.event, row.shape, row.record_id, row.status])).toEqual([
        ['person', 'create', objectType, person.id, 'accepted'],
        ['person', 'update', objectType, person.id, 'accepted'],
        ['deal', 'create', objectType, deal.id, 'accepted'],
        ['deal', 'destroy', objectType, deal.id, 'accepted'],
      ])
    },
  )
})
