// The includes `avatar` and `connections` of people and companies, whose shapes the spec does not show:
// an avatar is kept whole in the jsonb column `avatar`, each item of `connections` as a row of
// crm.connections at its place, whatever its shape. No shape fails the batch it comes in. Migration
// 0024 gives records mirrored before, that carried them unasked, what the store would have written.
import { sql } from 'kysely'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { down, up } from '../../migrations/0024_avatars_connections.ts'
import { companies, people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { upsertRecords } from '../../src/store/records.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'

const database = useTestDatabase()
const created: TestDatabase[] = []
afterAll(async () => {
  await Promise.all(created.map(dropTestDatabase))
})

const T0 = '2022-12-14T15:53:43.000+01:00'
const LATER = '2022-12-14T15:53:44.000+01:00'
const fetched = () => ({ source: 'fetch' as const, fetchedAt: new Date() })

const record = (id: number, updatedAt: string, extra: Record<string, unknown> = {}) => ({
  id,
  account_id: 87444,
  name: 'Mustermann',
  created_at: T0,
  updated_at: updatedAt,
  ...extra,
})

const AVATAR = {
  id: 9116648,
  attachable_id: 1,
  attachable_type: 'Person',
  content_type: 'image/jpeg',
  file_file_name: 'maxi.jpg',
  url: 'https://files.example/avatars/9116648/original/maxi.jpg',
  created_at: T0,
}

/** Items of every shape an unknown array may hold, and what the store types as their `id`. */
const ITEMS: [unknown, number | null][] = [
  [{ id: 4803876, connectable_id: 30096393, connectable_type: 'Person', name: 'Kollege' }, 4803876],
  [{ id: 4803876, name: 'the same id again' }, 4803876],
  [{ network: 'xing', url: 'https://www.xing.example/profile/maxi' }, null],
  [{ id: '42', name: 'an id as text' }, 42],
  [{ id: ' -7 ' }, -7],
  [{ id: 12.0 }, 12],
  [{ id: 1.5 }, null],
  [{ id: 2 ** 53 }, null],
  [{ id: '99999999999999999' }, null],
  [{ id: 'abc' }, null],
  [{ id: { nested: 1 } }, null],
  [{}, null],
  [30096393, null],
  ['a connection as text', null],
  [null, null],
  [[1, 2], null],
  [true, null],
]

interface ConnectionRow {
  parent: string
  id: number | null
  _ordinal: number
  _raw: unknown
  _synced_at: Date
}

async function connections(db: Db, parent: string, parentId: number): Promise<ConnectionRow[]> {
  const { rows } = await sql<ConnectionRow>`
    select _parent_resource as parent, id, _ordinal, _raw, _synced_at from crm.connections
    where _parent_resource = ${parent} and _parent_id = ${parentId} order by _ordinal`.execute(db)
  return rows
}

async function avatarOf(db: Db, table: 'crm.people' | 'crm.companies', id: number): Promise<unknown> {
  const { rows } = await sql<{ avatar: unknown }>`
    select avatar from ${sql.table(table)} where id = ${id}`.execute(db)
  return rows[0]?.avatar
}

beforeEach(async () => {
  await sql`truncate crm.people, crm.companies, crm.connections`.execute(database.db)
})

describe('the avatar of a person or company', () => {
  it('is kept whole in its column, whatever its shape; null when the record has none', async () => {
    const written = await upsertRecords(
      database.db,
      people,
      [
        record(1, T0, { avatar: AVATAR }),
        record(2, T0, { avatar: null }),
        record(3, T0),
        record(4, T0, { avatar: 'https://files.example/a.png' }),
        record(5, T0, { avatar: [AVATAR, { id: 2 }] }),
        record(6, T0, { avatar: {} }),
      ],
      fetched(),
    )
    expect(written.applied).toEqual([1, 2, 3, 4, 5, 6])
    const stored = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => avatarOf(database.db, 'crm.people', id)))
    expect(stored).toEqual([AVATAR, null, null, 'https://files.example/a.png', [AVATAR, { id: 2 }], {}])
    await upsertRecords(database.db, companies, [record(7, T0, { avatar: { ...AVATAR, id: 8 } })], fetched())
    expect(await avatarOf(database.db, 'crm.companies', 7)).toEqual({ ...AVATAR, id: 8 })
  })

  it('is in every version of the record (history), a change of it alone a version of its own', async () => {
    await upsertRecords(database.db, people, [record(11, T0, { avatar: AVATAR })], fetched())
    await upsertRecords(database.db, people, [record(11, LATER, { avatar: null })], fetched())
    const { rows } = await sql<{ avatar: unknown; current: boolean }>`
      select avatar, _valid_to is null as current from history.crm_people where id = 11
      order by _valid_from`.execute(database.db)
    expect(rows).toEqual([
      { avatar: AVATAR, current: false },
      { avatar: null, current: true },
    ])
  })
})

describe('the connections of a person or company', () => {
  it('are a row per item at its place, kept whole, whatever its shape, and never fail the batch', async () => {
    const items = ITEMS.map(([item]) => item)
    const written = await upsertRecords(
      database.db,
      people,
      [record(21, T0, { connections: items }), record(22, T0, { connections: [] })],
      fetched(),
    )
    expect(written.applied).toEqual([21, 22])
    const rows = await connections(database.db, 'crm.people', 21)
    expect(rows.map(({ _ordinal, id, _raw }) => ({ _ordinal, id, _raw }))).toEqual(
      ITEMS.map(([item, id], index) => ({ _ordinal: index, id, _raw: item })),
    )
    expect(await connections(database.db, 'crm.people', 22)).toEqual([])
    // A value that is no array holds no items; it fails nothing either.
    await upsertRecords(
      database.db,
      companies,
      [record(23, T0, { connections: { 0: { id: 1 } } })],
      fetched(),
    )
    expect(await connections(database.db, 'crm.companies', 23)).toEqual([])
  })

  it('are replaced with the record: unchanged rows stay, a record without the include leaves them', async () => {
    const first = [{ id: 1, name: 'Kollege' }, { network: 'xing', url: 'https://x.example/a' }, 7]
    await upsertRecords(database.db, companies, [record(31, T0, { connections: first })], fetched())
    await sql`update crm.connections set _synced_at = _synced_at - interval '1 hour'`.execute(database.db)
    const before = await connections(database.db, 'crm.companies', 31)

    const second = [first[0], { network: 'xing', url: 'https://x.example/b' }]
    await upsertRecords(database.db, companies, [record(31, LATER, { connections: second })], fetched())
    const after = await connections(database.db, 'crm.companies', 31)
    expect(after.map((row) => row._raw)).toEqual(second)
    expect(after[0]?._synced_at).toEqual(before[0]?._synced_at)
    expect(after[1]?._synced_at.getTime()).toBeGreaterThan(before[1]?._synced_at.getTime() ?? 0)

    // Written again without the include (a payload that lacks it): the rows stay as they are.
    await upsertRecords(database.db, companies, [record(31, LATER, { name: 'renamed' })], fetched())
    expect(await connections(database.db, 'crm.companies', 31)).toEqual(after)
  })
})

describe('migration 0024', () => {
  it('gives records that carried avatars and connections before what the store writes of them', async () => {
    const own = await createTestDatabase()
    created.push(own)
    const { db } = own
    const items = ITEMS.map(([item]) => item)
    await upsertRecords(
      db,
      people,
      [
        record(41, T0, { avatar: AVATAR, connections: items }),
        record(42, T0, { avatar: null, connections: 'none' }),
        record(43, T0),
      ],
      fetched(),
    )
    await upsertRecords(db, companies, [record(44, T0, { avatar: [1], connections: [items[0]] })], fetched())
    const state = async () => {
      const { rows: avatars } = await sql<{ id: number; avatar: unknown }>`
        select id, avatar from crm.people union all select id, avatar from crm.companies order by id`.execute(
        db,
      )
      const { rows: children } = await sql`
        select _parent_resource, _parent_id, _ordinal, id, _raw from crm.connections
        order by _parent_resource, _parent_id, _ordinal`.execute(db)
      return { avatars, children }
    }
    const written = await state()
    expect(written.children).toHaveLength(items.length + 1)

    // As if they had come before this version: no column, no table (nor the live views of them); then
    // the migration.
    await sql`drop schema crm_live cascade`.execute(db)
    await down(db)
    await up(db)
    expect(await state()).toEqual(written)
  })
})
