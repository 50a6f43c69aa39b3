// The store's write rules: monotonic upserts, same-second ties, sticky tombstones, children
// replaced with their parent (also when two writers race for one parent), and batches that are two
// statements whatever their size.
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { users } from '../../src/resources/crm.ts'
import { contacts, deals, notes, people } from '../../src/resources/index.ts'
import { InvalidRecordError, tombstone, upsertRecords } from '../../src/store/records.ts'
import { useTestDatabase, waitForLockWaiter } from '../support/database.ts'

const database = useTestDatabase()

const T0 = '2022-12-14T15:53:43.000+01:00'
const T0_UTC = '2022-12-14T14:53:43.000Z'
const LATER = '2022-12-14T15:53:44.000+01:00'
const EARLIER = '2022-12-14T15:53:42.000+01:00'

const person = (id: number, updatedAt: string, extra: Record<string, unknown> = {}) => ({
  id,
  account_id: 87444,
  name: 'Mustermann',
  first_name: 'Maxi',
  gender: 'female_user',
  created_at: '2022-11-29T13:25:56.000+01:00',
  updated_at: updatedAt,
  ...extra,
})

const fetched = (at = new Date()) => ({ source: 'fetch' as const, fetchedAt: at })
const payload = { source: 'payload' as const }

async function row(id: number) {
  return database.db.selectFrom('crm.people').selectAll().where('id', '=', id).executeTakeFirst()
}

async function tagNames(personId: number) {
  const rows = await database.db
    .selectFrom('crm.tags')
    .select('name')
    .where('_parent_resource', '=', 'crm.people')
    .where('_parent_id', '=', personId)
    .orderBy('_ordinal')
    .execute()
  return rows.map((r) => r.name)
}

beforeEach(async () => {
  await sql`truncate crm.people, crm.tags, crm.addresses, crm.contact_details, crm.deals, crm.deal_people,
    crm.users, reservations.contacts, reservations.contact_tags, crm.notes, crm.note_links`.execute(
    database.db,
  )
})

describe('upsertRecords', () => {
  it('stores typed columns, the raw record and the engine columns', async () => {
    const record = person(30016185, T0, { gender: 2, user_id: null, unknown_key: { kept: true } })
    const result = await upsertRecords(database.db, people, [record], fetched())
    expect(result).toEqual({ applied: [30016185], ignored: [], inserted: [30016185] })
    const stored = await row(30016185)
    expect(stored).toMatchObject({
      id: 30016185,
      account_id: 87444,
      gender: '2',
      user_id: null,
      _source: 'fetch',
    })
    expect(stored?.updated_at?.toISOString()).toBe(T0_UTC)
    expect(stored?._raw).toEqual(record)
    expect(stored?._deleted_at).toBeNull()
    expect(stored?._synced_at).toBeInstanceOf(Date)
  })

  it('never lets an older record replace a newer one', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { name: 'new' })], payload)
    const result = await upsertRecords(database.db, people, [person(1, EARLIER, { name: 'old' })], fetched())
    expect(result).toEqual({ applied: [], ignored: [1], inserted: [] })
    expect((await row(1))?.name).toBe('new')
  })

  it('lets a newer record replace an older one, whatever its source', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { name: 'fetched' })], fetched())
    await upsertRecords(database.db, people, [person(1, LATER, { name: 'payload' })], payload)
    expect((await row(1))?.name).toBe('payload')
  })

  it('accepts a record of the same second (not older than), from the same source', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { name: 'first' })], payload)
    await upsertRecords(database.db, people, [person(1, T0, { name: 'second' })], payload)
    expect((await row(1))?.name).toBe('second')
    await upsertRecords(database.db, people, [person(1, T0, { name: 'fetched' })], fetched())
    await upsertRecords(database.db, people, [person(1, T0, { name: 'fetched again' })], fetched())
    expect((await row(1))?.name).toBe('fetched again')
  })

  it('lets a fetched record win over a payload of the same second, in either order', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { name: 'fetched' })], fetched())
    const late = await upsertRecords(database.db, people, [person(1, T0, { name: 'payload' })], payload)
    expect(late.ignored).toEqual([1])
    expect((await row(1))?.name).toBe('fetched')

    await upsertRecords(database.db, people, [person(2, T0, { name: 'payload' })], payload)
    await upsertRecords(database.db, people, [person(2, T0, { name: 'fetched' })], fetched())
    expect((await row(2))?.name).toBe('fetched')
  })

  it('on a tie between two fetches, keeps the answer to the later request, whichever lands last', async () => {
    const sent = (seconds: number) => fetched(new Date(Date.parse('2026-01-01T00:00:00Z') + seconds * 1000))
    await upsertRecords(database.db, people, [person(1, T0, { name: 'seen at 2' })], sent(2))
    // A sweep's page asked at 1 and applied after the refresh asked at 2: the older answer.
    const older = await upsertRecords(database.db, people, [person(1, T0, { name: 'seen at 1' })], sent(1))
    expect(older.ignored).toEqual([1])
    expect(await row(1)).toMatchObject({ name: 'seen at 2', _fetched_at: new Date('2026-01-01T00:00:02Z') })
    await upsertRecords(database.db, people, [person(1, T0, { name: 'seen at 3' })], sent(3))
    expect(await row(1)).toMatchObject({ name: 'seen at 3', _fetched_at: new Date('2026-01-01T00:00:03Z') })
  })

  it('compares instants, not strings: the same second in another offset is a tie', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { name: 'local' })], payload)
    const result = await upsertRecords(database.db, people, [person(1, T0_UTC, { name: 'utc' })], payload)
    expect(result.applied).toEqual([1])
  })

  it('keeps the newest of duplicates within one batch', async () => {
    const result = await upsertRecords(
      database.db,
      people,
      [person(1, LATER, { name: 'newest' }), person(1, EARLIER, { name: 'older' })],
      fetched(),
    )
    expect(result.applied).toEqual([1])
    expect((await row(1))?.name).toBe('newest')
  })

  it('rejects a record without id or updated_at, naming the resource', async () => {
    await expect(
      upsertRecords(database.db, people, [{ name: 'x', updated_at: T0 }], payload),
    ).rejects.toThrow(InvalidRecordError)
    await expect(
      upsertRecords(database.db, people, [{ id: 5, updated_at: 'yesterday' }], payload),
    ).rejects.toThrow(/crm\.people 5: updated_at/)
  })

  it('stores values a column cannot hold as null and keeps them in _raw', async () => {
    await upsertRecords(
      database.db,
      deals,
      [
        {
          id: 9,
          updated_at: T0,
          value: '12.50',
          value_count: 'lots',
          target_date: '31.12.2022',
          finished_at: 'never',
        },
      ],
      fetched(),
    )
    const deal = await database.db
      .selectFrom('crm.deals')
      .selectAll()
      .where('id', '=', 9)
      .executeTakeFirstOrThrow()
    expect(deal).toMatchObject({
      value: '12.50',
      value_count: null,
      target_date: '2022-12-31',
      finished_at: null,
    })
    expect(deal._raw).toMatchObject({ value_count: 'lots' })
  })

  it('replaces every row of a resource without updated_at (users) when fetched', async () => {
    await upsertRecords(database.db, users, [{ id: 7, first: 'A', name: 'B', login: 'a@b' }], fetched())
    await upsertRecords(database.db, users, [{ id: 7, first: 'A', name: 'C', login: 'a@b' }], fetched())
    const user = await database.db.selectFrom('crm.users').selectAll().where('id', '=', 7).executeTakeFirst()
    expect(user?.name).toBe('C')
  })
})

describe('tombstones', () => {
  it('marks a row deleted and keeps its data', async () => {
    await upsertRecords(database.db, people, [person(1, T0)], fetched())
    expect(await tombstone(database.db, people, [1])).toEqual([1])
    const stored = await row(1)
    expect(stored?._deleted_at).toBeInstanceOf(Date)
    expect(stored?.name).toBe('Mustermann')
    expect(await tombstone(database.db, people, [1])).toEqual([]) // already deleted
  })

  it('is not undone by a stale payload, even a newer-looking one', async () => {
    await upsertRecords(database.db, people, [person(1, T0)], fetched())
    await tombstone(database.db, people, [1])
    const result = await upsertRecords(database.db, people, [person(1, LATER, { name: 'zombie' })], payload)
    expect(result.ignored).toEqual([1])
    expect((await row(1))?._deleted_at).not.toBeNull()
  })

  it('is not undone by a record whose request was sent before the tombstone', async () => {
    const sentBefore = new Date(Date.now() - 60_000)
    await upsertRecords(database.db, people, [person(1, T0)], fetched())
    await tombstone(database.db, people, [1])
    await upsertRecords(database.db, people, [person(1, LATER)], fetched(sentBefore))
    expect((await row(1))?._deleted_at).not.toBeNull()
  })

  it('is undone by a record fetched after it', async () => {
    await upsertRecords(database.db, people, [person(1, T0)], fetched())
    await tombstone(database.db, people, [1], new Date(Date.now() - 1000))
    const result = await upsertRecords(
      database.db,
      people,
      [person(1, T0, { name: 'back' })],
      fetched(new Date()),
    )
    expect(result.applied).toEqual([1])
    expect(await row(1)).toMatchObject({ name: 'back', _deleted_at: null })
  })

  it('of an id never mirrored leaves a placeholder that a late payload cannot bring to life', async () => {
    expect(await tombstone(database.db, people, [42])).toEqual([42])
    await upsertRecords(database.db, people, [person(42, T0)], payload)
    expect(await row(42)).toMatchObject({ id: 42, name: null, _raw: null })
    expect((await row(42))?._deleted_at).not.toBeNull()
  })

  it('follows the upstream soft delete of reservation contacts', async () => {
    const contact = { id: 187, last: 'Gast', updated_at: T0, newsletter: false, deleted_at: null }
    await upsertRecords(database.db, contacts, [contact], fetched())
    const live = await database.db.selectFrom('reservations.contacts').selectAll().executeTakeFirstOrThrow()
    expect(live).toMatchObject({ newsletter: null, _deleted_at: null })
    await upsertRecords(
      database.db,
      contacts,
      [{ ...contact, updated_at: LATER, deleted_at: LATER }],
      fetched(),
    )
    const deleted = await database.db
      .selectFrom('reservations.contacts')
      .selectAll()
      .executeTakeFirstOrThrow()
    expect(deleted._deleted_at?.toISOString()).toBe(new Date(LATER).toISOString())
  })
})

describe('children', () => {
  const tag = (id: number, name: string) => ({
    id,
    name,
    attachable_id: 1,
    attachable_type: 'Person',
    api_input: true,
  })

  it('of one parent written by two racing writers are those of the last', async () => {
    await upsertRecords(database.db, people, [person(1, EARLIER, { tags: [] })], fetched())
    const first = await database.db.startTransaction().execute()
    try {
      await upsertRecords(first, people, [person(1, T0, { tags: [tag(1, 'first')] })], fetched())
      // The second writer waits for the first's lock on the parent...
      const second = upsertRecords(
        database.db,
        people,
        [person(1, LATER, { tags: [tag(2, 'second')] })],
        fetched(),
      )
      await waitForLockWaiter(database.db, 'the second writer to wait for the parent')
      // ...and, once the first commits, replaces the children the first wrote meanwhile.
      await first.commit().execute()
      await second
    } finally {
      if (!first.isCommitted) await first.rollback().execute()
    }
    expect(await tagNames(1)).toEqual(['second'])
  })

  it('are replaced together with their parent', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { tags: [tag(1, 'a'), tag(2, 'b')] })], fetched())
    expect(await tagNames(1)).toEqual(['a', 'b'])
    await upsertRecords(database.db, people, [person(1, LATER, { tags: [tag(3, 'c')] })], fetched())
    expect(await tagNames(1)).toEqual(['c'])
    await upsertRecords(database.db, people, [person(1, LATER, { tags: [] })], fetched())
    expect(await tagNames(1)).toEqual([])
  })

  it('keep an item the upstream lists twice, at both places: the key is the place (issue 21)', async () => {
    // A key on the item's values (parent, tag id) would refuse the whole batch that carries the copy.
    const twice = [tag(1, 'vip'), tag(1, 'vip'), tag(2, 'b')]
    await upsertRecords(
      database.db,
      people,
      [person(1, T0, { tags: twice }), person(2, T0, { tags: twice })],
      fetched(),
    )
    expect(await tagNames(1)).toEqual(['vip', 'vip', 'b'])
    // Every place takes another value: each row is replaced at its place, and one more is added.
    const moved = [tag(2, 'b'), tag(1, 'vip'), tag(1, 'vip'), tag(1, 'vip')]
    await upsertRecords(database.db, people, [person(1, LATER, { tags: moved })], fetched())
    expect(await tagNames(1)).toEqual(['b', 'vip', 'vip', 'vip'])
    expect(await tagNames(2)).toEqual(['vip', 'vip', 'b'])
    // A note linked to one person twice; a reservation contact with one tag twice.
    const note = { id: 8, updated_at: T0, type: 'ProtocolObjectNote', company_ids: [], deal_ids: [] }
    await upsertRecords(database.db, notes, [{ ...note, person_ids: [5, 5], project_ids: [6, 6] }], fetched())
    const contact = { id: 9, last: 'Gast', updated_at: T0, deleted_at: null }
    const guest = { id: 3, name: 'Stammgast' }
    await upsertRecords(database.db, contacts, [{ ...contact, tags: [guest, guest] }], fetched())
    const { rows } = await sql<{ row: string }>`
      select _parent_resource || ' ' || _ordinal || ' ' || attachable_type || ' ' || attachable_id as row
      from crm.note_links
      union all
      select _parent_resource || ' ' || _ordinal || ' ' || id || ' ' || name from reservations.contact_tags
      order by 1`.execute(database.db)
    expect(rows.map((r) => r.row)).toEqual([
      'crm.notes 0 Person 5',
      'crm.notes 1 Person 5',
      'crm.notes 2 Project 6',
      'crm.notes 3 Project 6',
      'reservations.contacts 0 3 Stammgast',
      'reservations.contacts 1 3 Stammgast',
    ])
  })

  it('end as a full replace would leave them, rows whose values are unchanged kept as they were', async () => {
    const CHILD_TABLES = ['crm.tags', 'crm.addresses', 'crm.contact_details']
    /** Every child row of the people, all columns but `_synced_at`, as text (numbers keep their scale). */
    const childRows = async () => {
      const rows: string[] = []
      for (const table of CHILD_TABLES) {
        const result = await sql<{ row: string }>`
          select (to_jsonb(c) - '_synced_at')::text as row from ${sql.table(table)} c
          order by _parent_id, _ordinal, (to_jsonb(c) - '_synced_at')::text`.execute(database.db)
        rows.push(...result.rows.map((r) => `${table} ${r.row}`))
      }
      return rows
    }
    const syncedAt = async (table: string, id: number) => {
      const { rows } = await sql<{ at: Date }>`
        select _synced_at as at from ${sql.table(table)} where _parent_id = 1 and id = ${id}`.execute(
        database.db,
      )
      return rows.map((r) => r.at.getTime())
    }
    const before = person(1, T0, {
      tags: [tag(1, 'same'), tag(2, 'renamed'), tag(3, 'dropped'), tag(4, 'moves')],
      addrs: [{ id: 10, city: 'Leipzig', street: '', primary: null, atype: 'work_hq' }],
      // The same item under another include: the same _raw, another `type`.
      tels: [{ id: 20, atype: 'office', name: 'x' }],
      emails: [],
      homepages: [{ id: 21, atype: 'office', name: 'https://example.com' }],
      other: { id: 2 },
    })
    const after = person(1, LATER, {
      tags: [tag(1, 'same'), tag(2, 'renamed!'), tag(4, 'moves'), tag(5, 'new')],
      addrs: [{ id: 10, city: 'Leipzig', street: '', primary: null, atype: 'work_hq' }],
      tels: [],
      emails: [{ id: 20, atype: 'office', name: 'x' }],
      homepages: [{ id: 21, atype: 'office', name: 'https://example.com' }],
    })
    // Another parent's children are not touched.
    await upsertRecords(database.db, people, [before, { ...before, id: 2 }], fetched())
    // (A copy of a row, as an old race could leave, is no more: the key, migration 0018, refuses it.)
    const firstWrite = await syncedAt('crm.tags', 1)
    expect(firstWrite).toHaveLength(1)

    await upsertRecords(database.db, people, [after], fetched())
    const kept = await childRows()

    // The reference: the same records written into an empty mirror, every child row inserted.
    await sql`truncate crm.people, crm.tags, crm.addresses, crm.contact_details`.execute(database.db)
    await upsertRecords(database.db, people, [{ ...before, id: 2 }], fetched())
    await upsertRecords(database.db, people, [after], fetched())
    expect(kept).toEqual(await childRows())
    expect(kept.filter((row) => row.startsWith('crm.tags')).length).toBe(8)
    expect(await tagNames(1)).toEqual(['same', 'renamed!', 'moves', 'new'])
  })

  it('keep the _synced_at of rows whose values are unchanged, and rewrite the others', async () => {
    await upsertRecords(
      database.db,
      people,
      [person(1, T0, { tags: [tag(1, 'a'), tag(2, 'b'), tag(3, 'c')] })],
      fetched(),
    )
    const stamps = async () => {
      const { rows } = await sql<{ name: string; at: Date }>`
        select name, _synced_at as at from crm.tags where _parent_id = 1 order by _ordinal`.execute(
        database.db,
      )
      return rows.map((r) => [r.name, r.at.getTime()] as const)
    }
    // Written a minute ago, so that a rewrite now is told apart without waiting.
    await sql`update crm.tags set _synced_at = _synced_at - interval '1 minute'`.execute(database.db)
    const first = await stamps()
    // a unchanged; b changed; c now at another ordinal; d new.
    await upsertRecords(
      database.db,
      people,
      [person(1, LATER, { tags: [tag(1, 'a'), tag(2, 'b2'), tag(4, 'd'), tag(3, 'c')] })],
      fetched(),
    )
    const second = await stamps()
    expect(second.map(([name]) => name)).toEqual(['a', 'b2', 'd', 'c'])
    expect(second[0]?.[1]).toBe(first[0]?.[1])
    for (const [, at] of second.slice(1)) expect(at).toBeGreaterThan(first[0]?.[1] ?? 0)
  })

  it('are not touched when the parent is written with the includes it had, byte for byte', async () => {
    const addrs = [{ id: 10, city: 'Leipzig', street: 'Hauptstr. 1', primary: null }]
    const tags = [tag(1, 'a'), tag(2, 'b')]
    await upsertRecords(database.db, people, [person(1, T0, { tags, addrs })], fetched())
    // Written a minute ago, so that a rewrite now is told apart without waiting.
    await sql`update crm.tags set _synced_at = _synced_at - interval '1 minute'`.execute(database.db)
    await sql`update crm.addresses set _synced_at = _synced_at - interval '1 minute'`.execute(database.db)
    const versions = async (table: 'crm.tags' | 'crm.addresses') => {
      const { rows } = await sql<{ version: string }>`
        select ctid::text || ' ' || _synced_at::text as version from ${sql.table(table)} order by _ordinal`.execute(
        database.db,
      )
      return rows.map((r) => r.version)
    }
    const tagsBefore = await versions('crm.tags')
    const addressesBefore = await versions('crm.addresses')

    const statements: string[] = []
    const counting = database.db.withPlugin({
      transformQuery: (args) => {
        statements.push(args.node.kind)
        return args.node
      },
      transformResult: async (args) => args.result,
    })
    // Another name, the same includes (in another key order): only the parent is written.
    const same = person(1, LATER, {
      name: 'Renamed',
      addrs: [{ primary: null, street: 'Hauptstr. 1', city: 'Leipzig', id: 10 }],
      tags,
    })
    expect((await upsertRecords(counting, people, [same], fetched())).applied).toEqual([1])
    expect(statements).toHaveLength(1)
    expect((await row(1))?.name).toBe('Renamed')
    expect(await versions('crm.tags')).toEqual(tagsBefore)
    expect(await versions('crm.addresses')).toEqual(addressesBefore)

    // One include changes: its table is replaced, the other is still not touched.
    const LATEST = '2022-12-14T15:53:45.000+01:00'
    await upsertRecords(database.db, people, [person(1, LATEST, { tags, addrs: [] })], fetched())
    expect(await versions('crm.addresses')).toEqual([])
    expect(await versions('crm.tags')).toEqual(tagsBefore)
    expect(await tagNames(1)).toEqual(['a', 'b'])
  })

  it('are replaced when another writer changed them after the statement began, though its includes are the old ones', async () => {
    // The row holds tag "a". A first writer replaces it by "b" and holds its transaction open; a second
    // writer, whose record carries "a" again, waits for the lock with a snapshot that shows the row
    // with "a". Its includes equal that row's, yet the row it replaces is the first writer's.
    await upsertRecords(database.db, people, [person(1, EARLIER, { tags: [tag(1, 'a')] })], fetched())
    const first = await database.db.startTransaction().execute()
    try {
      await upsertRecords(first, people, [person(1, T0, { tags: [tag(2, 'b')] })], fetched())
      const second = upsertRecords(
        database.db,
        people,
        [person(1, LATER, { tags: [tag(1, 'a')] })],
        fetched(),
      )
      await waitForLockWaiter(database.db, 'the second writer to wait for the parent')
      await first.commit().execute()
      expect((await second).applied).toEqual([1])
    } finally {
      if (!first.isCommitted) await first.rollback().execute()
    }
    expect(await tagNames(1)).toEqual(['a'])
  })

  it('are left alone when the parent was not written (older record)', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { tags: [tag(1, 'current')] })], fetched())
    await upsertRecords(database.db, people, [person(1, EARLIER, { tags: [tag(9, 'stale')] })], fetched())
    expect(await tagNames(1)).toEqual(['current'])
  })

  it('are left alone when the record does not carry the include', async () => {
    await upsertRecords(database.db, people, [person(1, T0, { tags: [tag(1, 'kept')] })], fetched())
    await upsertRecords(database.db, people, [person(1, LATER)], payload)
    expect(await tagNames(1)).toEqual(['kept'])
  })

  it('of several includes share a table only when all of them arrive', async () => {
    const details = {
      tels: [{ id: 1, atype: 'office', name: '+49 341 1' }],
      emails: [{ id: 2, atype: 'office', name: 'maxi@example.com' }],
      homepages: [],
    }
    await upsertRecords(database.db, people, [person(1, T0, details)], fetched())
    const rows = await database.db
      .selectFrom('crm.contact_details')
      .select(['type', 'name'])
      .orderBy('_ordinal')
      .execute()
    expect(rows).toEqual([
      { type: 'Tel', name: '+49 341 1' },
      { type: 'Email', name: 'maxi@example.com' },
    ])
    // only tels arrive: contact details stay as they were rather than losing the e-mail
    await upsertRecords(database.db, people, [person(1, LATER, { tels: [] })], fetched())
    expect(await database.db.selectFrom('crm.contact_details').select('name').execute()).toHaveLength(2)
  })

  it('fill the parent column of join tables', async () => {
    const deal = {
      id: 5,
      updated_at: T0,
      name: 'Deal',
      people: [{ id: 30016185, first_name: 'Maxi', name: 'M' }],
    }
    await upsertRecords(database.db, deals, [deal], fetched())
    const rows = await database.db.selectFrom('crm.deal_people').selectAll().execute()
    expect(rows).toMatchObject([
      { deal_id: 5, person_id: 30016185, first_name: 'Maxi', _parent_resource: 'crm.deals' },
    ])
  })

  it("of bare ids (a note's person_ids) are a row per id, typed by the mapping; unchanged rows kept", async () => {
    const note = (updatedAt: string, links: Record<string, unknown[]>) => ({
      id: 7,
      updated_at: updatedAt,
      type: 'ProtocolObjectNote',
      deal_ids: [],
      ...links,
    })
    const links = async () => {
      const { rows } = await sql<{ row: string; at: Date }>`
        select _ordinal || ' ' || coalesce(attachable_type, '-') || ' ' || coalesce(attachable_id::text, '-')
          || ' ' || _raw::text as row, _synced_at as at
        from crm.note_links where _parent_resource = 'crm.notes' and _parent_id = 7 order by _ordinal`.execute(
        database.db,
      )
      return rows
    }
    // Items that are neither number nor string are skipped; a string is read as the id it holds.
    const odd = [31, 'x', null, { id: 1 }, '32']
    await upsertRecords(
      database.db,
      notes,
      [note(T0, { person_ids: [11, 12], company_ids: [21], project_ids: odd })],
      fetched(),
    )
    const first = await links()
    expect(first.map((r) => r.row)).toEqual([
      '0 Person 11 11',
      '1 Person 12 12',
      '2 Company 21 21',
      '3 Project 31 31',
      '4 Project - "x"',
      '5 Project 32 "32"',
    ])
    // Written a minute ago, so that a rewrite now is told apart without waiting.
    await sql`update crm.note_links set _synced_at = _synced_at - interval '1 minute'`.execute(database.db)
    const before = await links()
    await upsertRecords(
      database.db,
      notes,
      [note(LATER, { person_ids: [11, 13], company_ids: [21], project_ids: odd })],
      fetched(),
    )
    const after = await links()
    expect(after.map((r) => r.row)).toEqual([
      '0 Person 11 11',
      '1 Person 13 13',
      '2 Company 21 21',
      '3 Project 31 31',
      '4 Project - "x"',
      '5 Project 32 "32"',
    ])
    // Only the changed place was written again.
    const kept = after.filter((r, i) => r.at.getTime() === before[i]?.at.getTime())
    expect(kept.map((r) => r.row)).toEqual(after.filter((_, i) => i !== 1).map((r) => r.row))
    // A record without one of the arrays leaves the links alone.
    await upsertRecords(database.db, notes, [{ id: 7, updated_at: LATER, person_ids: [] }], fetched())
    expect((await links()).map((r) => r.row)).toEqual(after.map((r) => r.row))
  })
})

describe('values on their way to PostgreSQL', () => {
  const awkward = ['say "hi"', 'back\\slash', '{a,b}', 'NULL', '', '  padded  ', 'line\nbreak', 'Ümlaut ✓ 😀']

  it('keep text exactly, whatever characters it holds', async () => {
    const records = awkward.map((name, i) => person(100 + i, T0, { name, first_name: `${name}!` }))
    await upsertRecords(database.db, people, records, fetched())
    const rows = await database.db
      .selectFrom('crm.people')
      .select(['id', 'name', 'first_name', '_raw'])
      .orderBy('id')
      .execute()
    expect(rows.map((r) => r.name)).toEqual(awkward)
    expect(rows.map((r) => r.first_name)).toEqual(awkward.map((name) => `${name}!`))
    expect(rows.map((r) => r._raw)).toEqual(records)
  })

  it('write text PostgreSQL cannot hold (NUL, half a surrogate pair) as U+FFFD, and the rest of the batch as it is', async () => {
    const records = [
      person(200, T0, { name: 'nul\u0000here', 'key\u0000': 'x', tags: [{ id: 1, name: 'lone \ud800' }] }),
      person(201, T0, { name: 'plain', tags: [{ id: 2, name: 'fine' }] }),
    ]
    const result = await upsertRecords(database.db, people, records, fetched())
    expect(result.applied).toEqual([200, 201])
    expect(await row(200)).toMatchObject({
      name: 'nul\uFFFDhere',
      _raw: { name: 'nul\uFFFDhere', 'key\uFFFD': 'x', tags: [{ id: 1, name: 'lone \uFFFD' }] },
    })
    expect(await tagNames(200)).toEqual(['lone \uFFFD'])
    expect(await row(201)).toMatchObject({ name: 'plain', _raw: records[1] })
    expect(await tagNames(201)).toEqual(['fine'])
  })

  it('store jsonb columns as the values they are, and null for a missing one', async () => {
    const user = { id: 7, name: 'A "quoted" \\ user', tags: ['x', null] }
    await upsertRecords(
      database.db,
      people,
      [person(1, T0, { user }), person(2, T0, { user: 'just text' }), person(3, T0)],
      fetched(),
    )
    const rows = await database.db.selectFrom('crm.people').select(['id', 'user']).orderBy('id').execute()
    expect(rows).toEqual([
      { id: 1, user },
      { id: 2, user: 'just text' },
      { id: 3, user: null },
    ])
  })

  it('keep numbers, booleans and dates of every column type', async () => {
    const deal = {
      id: 9,
      updated_at: T0,
      value: 12.5,
      value_count: '3',
      target_date: '2022-12-31',
      user_id: '42',
      person_ids_set: 5,
    }
    await upsertRecords(database.db, deals, [deal], fetched())
    const row = await database.db.selectFrom('crm.deals').selectAll().executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      value: '12.5',
      value_count: '3',
      target_date: '2022-12-31',
      user_id: 42,
      person_ids_set: '5',
    })
  })

  it('give each child row its own item as _raw, items that are not objects skipped', async () => {
    const tags = [
      { id: 1, name: 'a "b"', attachable_type: 'Person' },
      'not an item',
      null,
      { id: 2, name: 'c\\d', api_input: '1' },
    ]
    const emails = [{ id: 3, name: 'x@example.com', atype: 'office' }]
    const record = person(1, T0, { tags, tels: [], emails, homepages: [7] })
    await upsertRecords(database.db, people, [record], fetched())
    const stored = await database.db
      .selectFrom('crm.tags')
      .select(['_ordinal', 'id', 'name', 'api_input', '_raw'])
      .orderBy('_ordinal')
      .execute()
    expect(stored).toEqual([
      { _ordinal: 0, id: 1, name: 'a "b"', api_input: null, _raw: tags[0] },
      { _ordinal: 1, id: 2, name: 'c\\d', api_input: true, _raw: tags[3] },
    ])
    const details = await database.db
      .selectFrom('crm.contact_details')
      .select(['_ordinal', 'type', 'name', '_raw'])
      .execute()
    expect(details).toEqual([{ _ordinal: 0, type: 'Email', name: 'x@example.com', _raw: emails[0] }])
  })
})

describe('children in a batch', () => {
  const tag = (id: number, name: string) => ({ id, name, attachable_type: 'Person' })

  it('are replaced for the parents written, and only theirs', async () => {
    await upsertRecords(
      database.db,
      people,
      [
        person(1, T0, { tags: [tag(1, 'one')] }),
        person(2, T0, { tags: [tag(2, 'two')] }),
        person(3, T0, { tags: [tag(3, 'three')] }),
      ],
      fetched(),
    )
    const result = await upsertRecords(
      database.db,
      people,
      [
        person(1, LATER, { tags: [tag(4, 'one, later')] }), // written: tags replaced
        person(2, EARLIER, { tags: [tag(5, 'stale')] }), // refused: tags kept
        person(3, LATER), // written without the include: tags kept
      ],
      fetched(),
    )
    expect(result).toEqual({ applied: [1, 3], ignored: [2], inserted: [] })
    expect(await tagNames(1)).toEqual(['one, later'])
    expect(await tagNames(2)).toEqual(['two'])
    expect(await tagNames(3)).toEqual(['three'])
  })
})

describe('_version', () => {
  it('counts the writes of the row, tombstones included; a refused record leaves it', async () => {
    const version = async () => (await row(1))?._version
    await upsertRecords(database.db, people, [person(1, T0)], fetched())
    expect(await version()).toBe(0)
    await upsertRecords(database.db, people, [person(1, LATER)], fetched())
    expect(await version()).toBe(1)
    await upsertRecords(database.db, people, [person(1, EARLIER)], fetched())
    expect(await version()).toBe(1)
    await tombstone(database.db, people, [1])
    expect(await version()).toBe(2)
  })
})

describe('_fetched_at', () => {
  it('is the time of the request that wrote the row; a payload keeps it', async () => {
    const first = new Date('2024-05-01T10:00:00Z')
    await upsertRecords(database.db, people, [person(1, T0)], fetched(first))
    expect((await row(1))?._fetched_at).toEqual(first)
    await upsertRecords(database.db, people, [person(1, LATER, { name: 'payload' })], payload)
    expect(await row(1)).toMatchObject({ name: 'payload', _fetched_at: first })
    const second = new Date('2024-05-01T11:00:00Z')
    await upsertRecords(database.db, people, [person(1, LATER, { name: 'fetched' })], fetched(second))
    expect(await row(1)).toMatchObject({ name: 'fetched', _fetched_at: second })
    await upsertRecords(database.db, people, [person(2, T0)], payload)
    expect((await row(2))?._fetched_at).toBeNull()
  })

  it('is not moved by a refused record', async () => {
    const first = new Date('2024-05-01T10:00:00Z')
    await upsertRecords(database.db, people, [person(1, T0)], fetched(first))
    await upsertRecords(database.db, people, [person(1, EARLIER)], fetched(new Date('2024-05-02T10:00:00Z')))
    expect((await row(1))?._fetched_at).toEqual(first)
  })
})

describe('batches', () => {
  it('write 5,000 records with their children in two statements (parents, then children)', async () => {
    const records = Array.from({ length: 5000 }, (_, i) =>
      person(1_000_000 + i * 7, T0, {
        tags: [tag(i * 2, `t${i % 10}`), tag(i * 2 + 1, 'all')],
        addrs: [{ id: i, street: 'Hauptstr. 1', city: 'Leipzig', country_code: 'DE', primary: null }],
      }),
    )
    const statements: string[] = []
    const { db } = database
    const counting = db.withPlugin({
      transformQuery: (args) => {
        statements.push(args.node.kind)
        return args.node
      },
      transformResult: async (args) => args.result,
    })
    const result = await upsertRecords(counting, people, records, fetched())
    expect(result.applied).toHaveLength(5000)
    expect(statements).toHaveLength(2)
    const counts = await sql<{ people: number; tags: number; addresses: number }>`
      select (select count(*)::int from crm.people) as people, (select count(*)::int from crm.tags) as tags,
             (select count(*)::int from crm.addresses) as addresses
    `.execute(db)
    expect(counts.rows[0]).toEqual({ people: 5000, tags: 10000, addresses: 5000 })
  })

  function tag(id: number, name: string) {
    return { id, name, attachable_type: 'Person' }
  }
})
