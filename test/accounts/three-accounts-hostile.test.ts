// Several accounts in one deployment (ACCOUNTS_FILE, docs/accounts.md) under the conditions every sync
// test meets: three simulated upstreams at their least helpful (the real budget of 50 requests per 10 s
// per key, ties shuffled anew on every request, groups of records sharing one updated_at larger than a
// page), pages of 5 so that every listing takes several, and faults from the first request on: API
// calls answered 500 and 429 and slowed, webhook deliveries dropped, duplicated and held back so that
// later ones overtake them. north and south are seeded alike, so their records share ids; east otherwise.
//
// Asserts: every account converges in its own schemas while the faults last, changes made during its
// first sync included; changes and deletions made in one account under the faults reach that account's
// mirror and never another's (a colliding id keeps its row in the other accounts, and no version in
// their history ever held the change); each account's deliveries land in its own inbox, of its own
// records only, none in the code's own `sync.inbox`; once the faults are cleared, every account
// converges again and its next runs succeed.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FaultsPatch, type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { type AccountsEngine, startAccountsEngine } from '../support/accounts-engine.ts'
import { createTestDatabase, type TestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { runEnded } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const NAMES = ['north', 'south', 'east'] as const
type Name = (typeof NAMES)[number]

/** The sandbox's largest page: every resource seeded below takes several. */
const PAGE = 5
/** Records of each resource: 4 pages in north and south, 5 in east. */
const SEED_SIZE: Record<Name, number> = { north: 20, south: 20, east: 23 }

const FAULTS = {
  crm: { errorRate: 0.12, throttleRate: 0.03, latencyMs: 5, latencyMaxMs: 150 },
  reservation: { errorRate: 0.12, throttleRate: 0.03, latencyMs: 5, latencyMaxMs: 150 },
  deliveries: { dropRate: 0.2, duplicateRate: 0.2, delayRate: 0.4, delayMs: 600 },
} satisfies FaultsPatch

let database: TestDatabase
let accounts: AccountsEngine<Name>
let dbs: Record<Name, Db>
const sandboxes = {} as Record<Name, Sandbox>

beforeAll(async () => {
  // The sandbox's default behaviour but for the page size; the faults are on before the engine starts.
  for (const name of NAMES) {
    sandboxes[name] = await startSandbox({
      seed: name === 'east' ? 7 : 1,
      seedSize: SEED_SIZE[name],
      // Groups of 6 records sharing one updated_at: larger than a page, in a new order on every request.
      seedTies: 6,
      crmApiKey: `${name}-crm-key-0001`,
      reservationApiKey: `${name}-res-key-0001`,
      behaviour: { maxPerpage: PAGE },
      faults: FAULTS,
    })
  }
  database = await createTestDatabase()
  accounts = await startAccountsEngine(database, sandboxes, {
    // Incremental runs every 10 s: what a dropped delivery did not bring, they do.
    settings: { INCREMENTAL_SYNC_INTERVAL: '10' },
  })
  dbs = accounts.dbs
}, 60_000)

afterAll(async () => {
  await accounts?.stop()
})

/** Hooks crm-sync registers in each account: one per model and event. */
const HOOKS = WEBHOOK_MODELS.length * WEBHOOK_EVENTS.length

type Table = 'people' | 'companies'
const MODEL = { people: 'person', companies: 'company' } as const

/** Every record changed in each account through its sandbox's control API (`person 30000123`). */
const changed = Object.fromEntries(NAMES.map((name) => [name, new Set<string>()])) as Record<
  Name,
  Set<string>
>

/** Changes made as a user of the account's UI would make them: they fire webhooks (with the faults). */
const user = (name: Name) => {
  const crm = sandboxes[name].control.crm
  const mark = (table: Table, id: number) => {
    changed[name].add(`${MODEL[table]} ${id}`)
    return id
  }
  return {
    create: (table: Table, fields: Record<string, unknown>) => mark(table, crm.create(table, fields).id),
    update: (table: Table, id: number, fields: Record<string, unknown>) => {
      crm.update(table, mark(table, id), fields)
    },
    destroy: (table: Table, id: number) => crm.destroy(table, mark(table, id)),
  }
}

/** Waits until the account's mirror equals its upstream; on timeout, the differences are in the error. */
const converged = (name: Name, timeoutMs: number) =>
  waitFor(
    async () => {
      expect(await differences(dbs[name], sandboxes[name], { reservation: true }), name).toEqual([])
      return true
    },
    timeoutMs,
    `${name} converged`,
  )

interface Row {
  name: string | null
  deleted: boolean
}

/** A record's mirrored name and whether it is deleted, from one account's table. */
const rowOf = async (db: Db, table: Table, id: number) =>
  (
    await sql<Row>`
      select name, _deleted_at is not null as deleted from ${sql.table(`crm.${table}`)} where id = ${id}`.execute(
      db,
    )
  ).rows[0]

/** Versions of a record in one account's history whose name was `name`. */
const versionsNamed = async (db: Db, table: Table, id: number, name: string) =>
  (
    await sql<{ n: number }>`
      select count(*)::int as n from ${sql.table(`history.crm_${table}`)}
      where id = ${id} and name = ${name}`.execute(db)
  ).rows[0]?.n

/** Each account's inbox holds deliveries, all accepted, all of records changed in that account. */
async function expectOwnInboxes() {
  for (const name of NAMES) {
    const { rows } = await sql<{ delivery: string; status: string }>`
      select model || ' ' || record_id as delivery, status from sync.inbox order by id`.execute(dbs[name])
    expect(rows.length, name).toBeGreaterThan(0)
    for (const row of rows) {
      expect(changed[name], `${name}'s inbox: ${row.delivery}`).toContain(row.delivery)
      expect(row.status, `${name}'s inbox: ${row.delivery}`).not.toBe('rejected')
    }
  }
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from sync.inbox`.execute(database.db)
  expect(rows[0]?.n, 'sync.inbox').toBe(0)
}

/** The first ids of a list whose length was checked. */
type Ids<N extends number, T extends number[] = []> = T['length'] extends N ? T : Ids<N, [...T, number]>

const faulted = () =>
  NAMES.map((name) => sandboxes[name].control.counters().deliveries).reduce(
    (total, counts) => total + counts.dropped + counts.duplicated + counts.delayed,
    0,
  )

describe('three accounts in one deployment, at the upstreams’ least helpful and with faults', () => {
  it('converges every account while the faults last, each listing over several pages', async () => {
    // Once every hook is registered (each takes an id of the same sequence as people's), most often
    // while the first sync still walks (under load the faults' failed creates can hold the hooks back
    // past its end): a person created in north and one in south, with the same new id (the accounts
    // share their seed), and one deleted in each account. A round of creates fails whenever one of
    // its POSTs meets a fault (15% each), and registration then waits 2, 4, 8, 16, 32 s
    // (hooks/keeper.ts): five failed rounds take 62 s.
    await waitFor(
      async () =>
        NAMES.every((name) => sandboxes[name].control.crm.hooks().length === HOOKS) ? true : undefined,
      75_000,
      'every account’s hooks',
    )
    for (const name of NAMES)
      for (const hook of sandboxes[name].control.crm.hooks())
        expect(hook.target_url, name).toContain(`/accounts/${name}/webhooks/crm/${name}-webhook-secret-`)
    const created = {} as Record<Name, number>
    for (const name of NAMES) {
      created[name] = user(name).create('people', { name: `${name} created during the first sync` })
      const live = sandboxes[name].control.crm.liveIds('people')
      user(name).destroy('people', live[name === 'south' ? 2 : 1] as number)
    }
    expect(created.south).toBe(created.north)
    for (const name of NAMES) {
      await runEnded(dbs[name], 1, 60_000)
      await converged(name, 60_000)
    }
    for (const name of NAMES)
      expect(await rowOf(dbs[name], 'people', created[name]), name).toEqual({
        name: `${name} created during the first sync`,
        deleted: false,
      })

    for (const name of NAMES) {
      const counters = sandboxes[name].control.counters()
      // The faults were met: 500s and 429s.
      expect(
        counters.crm.injectedErrors +
          counters.crm.injectedThrottles +
          counters.reservation.injectedErrors +
          counters.reservation.injectedThrottles,
        name,
      ).toBeGreaterThan(0)
      // The walks learned the page size and read people and contacts over several pages.
      const { rows } = await sql<{ resource: string; largest_page: number | null; pages: number }>`
        select s.resource, s.largest_page,
          (select max(pages) from sync.run_resources r where r.resource = s.resource)::int as pages
        from sync.resource_state s
        where s.resource in ('crm.people', 'reservations.contacts')
        order by s.resource`.execute(dbs[name])
      expect(rows, name).toEqual([
        { resource: 'crm.people', largest_page: PAGE, pages: expect.any(Number) },
        { resource: 'reservations.contacts', largest_page: PAGE, pages: expect.any(Number) },
      ])
      for (const row of rows) expect(row.pages, `${name} ${row.resource}`).toBeGreaterThanOrEqual(4)
    }
  }, 125_000)

  it('takes changes and deletions made under the faults to their own account, and to no other', async () => {
    const north = sandboxes.north.control.crm
    const south = sandboxes.south.control.crm
    const shared = (table: Table) => north.liveIds(table).filter((id) => south.liveIds(table).includes(id))
    const [a, b, c, d, e, f, g, h] = shared('people') as Ids<8>
    const [x, y, z] = shared('companies') as Ids<3>
    expect(h).toBeDefined()
    expect(z).toBeDefined()
    // east's own, of its seed: its ids need not collide with the others'.
    const eastPerson = sandboxes.east.control.crm.liveIds('people')[0] as number

    /** What each account changes: its mirror must show it, the others' must not. */
    const changes: Record<Name, { updated: [Table, number, string][]; destroyed: [Table, number][] }> = {
      north: {
        updated: [
          ['people', a, 'north A'],
          ['people', b, 'north B'],
          ['companies', x, 'north X'],
        ],
        destroyed: [
          ['people', c],
          ['people', d],
        ],
      },
      south: {
        updated: [
          ['people', e, 'south E'],
          ['people', f, 'south F'],
          ['companies', y, 'south Y'],
        ],
        destroyed: [
          ['people', g],
          ['companies', z],
        ],
      },
      east: { updated: [['people', eastPerson, 'east only']], destroyed: [] },
    }
    const touched = (name: Name): [Table, number][] => [
      ...changes[name].updated.map(([table, id]): [Table, number] => [table, id]),
      ...changes[name].destroyed,
    ]

    // Before: every account's rows of the ids the other accounts change.
    const before = {} as Record<Name, Map<string, Row | undefined>>
    for (const name of NAMES) {
      before[name] = new Map()
      for (const other of NAMES.filter((other) => other !== name))
        for (const [table, id] of touched(other))
          before[name].set(`${table} ${id}`, await rowOf(dbs[name], table, id))
    }
    expect(before.south.get(`people ${a}`)?.deleted).toBe(false)
    expect(before.north.get(`people ${g}`)?.deleted).toBe(false)

    const faultedBefore = faulted()
    // Each name set twice, the first soon overwritten: a held-back delivery of the first must not win.
    // A record renamed, then deleted at once: its update's delivery must not bring it back.
    for (const name of NAMES) {
      for (const [table, id, value] of changes[name].updated) {
        user(name).update(table, id, { name: `${value} (first)` })
        user(name).update(table, id, { name: value })
      }
      for (const [table, id] of changes[name].destroyed) {
        user(name).update(table, id, { name: `${name} doomed` })
        user(name).destroy(table, id)
      }
    }
    // Many more deliveries in every account: one person changed again and again.
    for (let i = 0; i < 10; i++)
      for (const name of NAMES)
        user(name).update('people', name === 'east' ? eastPerson : h, { background: `${name} ${i}` })

    for (const name of NAMES) {
      await waitFor(
        async () => {
          for (const [table, id, value] of changes[name].updated)
            expect(await rowOf(dbs[name], table, id), `${name} ${table} ${id}`).toEqual({
              name: value,
              deleted: false,
            })
          for (const [table, id] of changes[name].destroyed)
            expect((await rowOf(dbs[name], table, id))?.deleted, `${name} ${table} ${id}`).toBe(true)
          return true
        },
        40_000,
        `${name}'s changes in its mirror`,
      )
    }
    for (const name of NAMES) await converged(name, 40_000)
    // The deliveries met the faults.
    expect(faulted()).toBeGreaterThan(faultedBefore)

    // No account's row of another account's ids changed, and no version in its history held a change.
    for (const name of NAMES) {
      for (const [key, row] of before[name]) {
        const [table, id] = key.split(' ') as [Table, string]
        expect(await rowOf(dbs[name], table, Number(id)), `${name} ${key}`).toEqual(row)
      }
      for (const other of NAMES.filter((other) => other !== name)) {
        for (const [table, id, value] of changes[other].updated)
          for (const version of [value, `${value} (first)`])
            expect(await versionsNamed(dbs[name], table, id, version), `${name} ${table} ${id}`).toBe(0)
        for (const [table, id] of changes[other].destroyed)
          expect(await versionsNamed(dbs[name], table, id, `${other} doomed`), `${name} ${table} ${id}`).toBe(
            0,
          )
      }
    }
    await expectOwnInboxes()
  }, 90_000)

  it('converges again once the faults are cleared, and its runs succeed', async () => {
    const cleared = new Date()
    for (const name of NAMES) sandboxes[name].control.resetFaults()
    // One more change and deletion in each account after the faults: the mirrors follow.
    for (const name of NAMES) {
      const crm = sandboxes[name].control.crm
      user(name).update('people', crm.liveIds('people').at(-1) as number, {
        name: `${name} after the faults`,
      })
      user(name).destroy('companies', crm.liveIds('companies').at(-1) as number)
    }
    for (const name of NAMES) {
      await converged(name, 40_000)
      // A run that started after the faults ended has succeeded.
      await waitFor(
        async () => {
          const { rows } = await sql<{ status: string }>`
            select status from sync.runs where started_at > ${cleared} and finished_at is not null`.execute(
            dbs[name],
          )
          return rows.some((row) => row.status === 'succeeded') ? true : undefined
        },
        30_000,
        `a run of ${name} started after the faults to succeed`,
      )
    }
    for (const name of NAMES) await converged(name, 10_000)
    await expectOwnInboxes()
  }, 90_000)
})
