// The avatars and connections of people and companies, through sweeps against the sandbox at its least
// helpful (a change to them leaves the parent's updated_at alone and fires no webhook, like a tag's),
// with API calls answered 500 and 429, at several pages: from an empty mirror an incremental sweep
// brings every avatar and connection, whatever the items' shapes (some have no id); changes to them on
// pages no incremental sweep reaches show at the next full sweep, removals included.
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { differences } from '../support/truth.ts'
import { sandboxConfig, sweep, sweepDeps, virtualClock } from './support.ts'

let database: TestDatabase
let sandbox: Sandbox

const CONTACTS = ['crm.people', 'crm.companies']

beforeEach(async () => {
  database = await createTestDatabase()
  // Pages of 20: 200 people are 10 pages, 60 companies 3.
  sandbox = await startSandbox({
    seedSize: { people: 200, companies: 60 },
    behaviour: { crmRateLimit: null, maxPerpage: 20, tieOrder: 'by-id' },
  })
  sandbox.control.setFaults({ crm: { errorRate: 0.05, throttleRate: 0.03 } })
})
afterEach(async () => {
  await sandbox.stop()
  await dropTestDatabase(database)
})

type Contacts = 'people' | 'companies'
type Shown = { id: number; updated_at: string; avatar: unknown; connections: unknown[] }
const shown = (collection: Contacts, id: number) =>
  sandbox.control.crm.get(collection, id) as unknown as Shown

/** Live records as the index lists them with `updated_at-desc`: newest first, ties by id. */
function newestFirst(collection: Contacts): number[] {
  return sandbox.control.crm
    .liveIds(collection)
    .map((id) => ({ id, at: Date.parse(shown(collection, id).updated_at) }))
    .sort((a, b) => b.at - a.at || a.id - b.id)
    .map((record) => record.id)
}

const count = async (query: string) =>
  (await sql<{ n: number }>`${sql.raw(`select count(*)::int as n from ${query}`)}`.execute(database.db))
    .rows[0]?.n

describe('avatars and connections', () => {
  it('come with the first sync, every item whatever its shape, under 500s and 429s', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox), { clock: virtualClock() })
    await sweep(deps, { mode: 'incremental', resources: CONTACTS })
    expect(await differences(database.db, sandbox, { only: CONTACTS })).toEqual([])

    const records = (collection: Contacts) =>
      sandbox.control.crm.liveIds(collection).map((id) => shown(collection, id))
    const items = [...records('people'), ...records('companies')].flatMap((record) => record.connections)
    const withoutId = items.filter((item) => !(typeof item === 'object' && item !== null && 'id' in item))
    expect(withoutId.length, 'items without an id').toBeGreaterThan(0)
    expect(await count('crm.connections')).toBe(items.length)
    expect(await count('crm.connections where id is null')).toBe(withoutId.length)
    for (const collection of ['people', 'companies'] as const) {
      const avatars = records(collection).filter((record) => record.avatar !== null).length
      expect(avatars, collection).toBeGreaterThan(5)
      expect(await count(`crm.${collection} where avatar is not null`)).toBe(avatars)
    }
    expect(sandbox.control.counters().crm.injectedErrors).toBeGreaterThan(0)
  })

  it('changed on the last pages, without a sign in updated_at, show at the next full sweep', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox), { clock: virtualClock() })
    await sweep(deps, { mode: 'incremental', resources: CONTACTS })
    const { crm } = sandbox.control
    const [oldest, second, third] = newestFirst('people').reverse() as [number, number, number]
    const [oldestCompany] = newestFirst('companies').reverse() as [number]
    const withAvatar = newestFirst('people')
      .slice(100)
      .find((id) => shown('people', id).avatar !== null) as number
    const withConnections = newestFirst('people')
      .slice(100)
      .find((id) => shown('people', id).connections.length > 1) as number
    expect(withAvatar, 'a person with an avatar past the first pages').toBeDefined()
    expect(withConnections, 'a person with connections past the first pages').toBeDefined()

    const touched = [oldest, second, withAvatar, withConnections]
    const stamps = () => touched.map((id) => shown('people', id).updated_at)
    const before = stamps()
    crm.setAvatar('people', oldest, { filename: 'neu.jpg' })
    crm.setAvatar('people', withAvatar, null)
    crm.setAvatar('companies', oldestCompany, { filename: 'logo-neu.png' })
    crm.addConnection('people', second, { to: { type: 'Company', id: oldestCompany }, name: 'Arbeitgeber' })
    crm.addConnection('people', second, { network: 'xing', url: 'https://www.xing.example/profile/neu' })
    crm.addConnection('companies', oldestCompany, { to: { type: 'Person', id: third }, name: 'Kunde' })
    crm.updateConnection('people', withConnections, 0, {
      name: 'Ehemaliger Kollege',
      url: 'https://x.example',
    })
    crm.removeConnection('people', withConnections, 1)
    expect(stamps()).toEqual(before)

    // The index shows no sign of them: an incremental sweep stops early.
    await sweep(deps, { mode: 'incremental', resources: CONTACTS })
    const unseen = await differences(database.db, sandbox, { only: CONTACTS, limit: 100 })
    expect(unseen.filter((line) => / (avatar|connections) "/.test(line))).toHaveLength(unseen.length)
    expect(unseen.length).toBeGreaterThanOrEqual(5)

    await sweep(deps, { mode: 'full', resources: CONTACTS })
    expect(await differences(database.db, sandbox, { only: CONTACTS })).toEqual([])
    const { rows } = await sql<{ ordinal: number; raw: unknown }>`
      select _ordinal as ordinal, _raw as raw from crm.connections
      where _parent_resource = 'crm.people' and _parent_id = ${second} order by _ordinal`.execute(database.db)
    expect(rows.map((row) => row.raw)).toEqual(shown('people', second).connections)
  })
})
