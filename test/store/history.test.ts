// History of the main tables (src/store/history.ts): every write path of the store (upserts of fetched
// records and of payloads, tombstones and placeholders, a deleted record fetched again) writes a version
// when the record's data changed and none when only engine columns did; versions close each other on
// the upstream's clock, never backwards; history.<table>_as_of(t) gives the table as it was; an install
// upgraded to history gets one version per row; the triggers cannot be forgotten.
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { users } from '../../src/resources/crm.ts'
import { historyViews } from '../../src/resources/dictionary/history.ts'
import { contacts, people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { inspectHistory, maintainHistory } from '../../src/store/history.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

const T1 = '2024-03-01T10:00:00.000Z'
const T2 = '2024-03-01T11:00:00.000Z'
const T3 = '2024-03-01T12:00:00.000Z'
const T4 = '2024-03-01T13:00:00.000Z'

const person = (id: number, updatedAt: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: 'Mustermann',
  first_name: 'Maxi',
  updated_at: updatedAt,
  tags: [{ id: 1, name: 'vip' }],
  ...extra,
})

const fetched = (at = new Date()) => ({ source: 'fetch' as const, fetchedAt: at })
const payload = { source: 'payload' as const }

interface Version {
  id: number
  name: string | null
  _valid_from: string
  _valid_to: string | null
  _deleted: boolean
  _deleted_at: string | null
}

async function versions(db: Db): Promise<Version[]> {
  const { rows } = await sql<Version>`
    select id, name, _valid_from::text, _valid_to::text, _deleted, _deleted_at::text
    from history.crm_people order by id, _valid_from, _valid_to nulls last`.execute(db)
  return rows
}

const at = (iso: string) => new Date(iso).toISOString().replace('T', ' ').replace('.000Z', '+00')

async function asOf(db: Db, time: string) {
  const { rows } = await sql<{ id: number; name: string | null; _deleted_at: Date | null }>`
    select id, name, _deleted_at from history.crm_people_as_of(${time}::timestamptz) order by id`.execute(db)
  return rows.map((row) => ({ id: row.id, name: row.name, deleted: row._deleted_at !== null }))
}

beforeEach(async () => {
  await sql`truncate crm.people, crm.tags, crm.users, reservations.contacts, history.crm_people_versions,
    history.crm_users_versions, history.reservations_contacts_versions`.execute(database.db)
})

describe('history of a main table', () => {
  it('keeps a version per change of the record, through every write path, none for a rewrite', async () => {
    const { db } = database
    await upsertRecords(db, people, [person(1, T1), person(2, T1)], fetched())
    // The same records again, fetched (a full resync) and as a payload: engine columns change only.
    await upsertRecords(db, people, [person(1, T1), person(2, T1)], fetched())
    await upsertRecords(db, people, [person(1, T1)], payload)
    // (The payload of the same second leaves the fetched row alone: the store's rule.)
    const rewrites = await sql<{ v: number }>`select min(_version)::int as v from crm.people`.execute(db)
    expect(rewrites.rows[0]?.v).toBe(1)
    expect(await versions(db)).toHaveLength(2)

    // A payload that changes the person, then a tag changed (the record's _raw) in the same second.
    await upsertRecords(db, people, [person(1, T2, { name: 'Musterfrau' })], payload)
    await upsertRecords(db, people, [person(1, T2, { name: 'Musterfrau', tags: [] })], fetched())
    // Deleted (a 404 at T3), an id never mirrored deleted too, and person 1 fetched again later.
    expect((await tombstone(db, people, [1, 3], new Date(T3))).sort()).toEqual([1, 3])
    await upsertRecords(db, people, [person(1, T4, { name: 'Wieder' })], fetched(new Date(T4)))

    expect(await versions(db)).toEqual([
      {
        id: 1,
        name: 'Mustermann',
        _valid_from: at(T1),
        _valid_to: at(T2),
        _deleted: false,
        _deleted_at: null,
      },
      // Two versions of one second: the first covers no instant.
      {
        id: 1,
        name: 'Musterfrau',
        _valid_from: at(T2),
        _valid_to: at(T2),
        _deleted: false,
        _deleted_at: null,
      },
      {
        id: 1,
        name: 'Musterfrau',
        _valid_from: at(T2),
        _valid_to: at(T3),
        _deleted: false,
        _deleted_at: null,
      },
      {
        id: 1,
        name: 'Musterfrau',
        _valid_from: at(T3),
        _valid_to: at(T4),
        _deleted: true,
        _deleted_at: at(T3),
      },
      { id: 1, name: 'Wieder', _valid_from: at(T4), _valid_to: null, _deleted: false, _deleted_at: null },
      { id: 2, name: 'Mustermann', _valid_from: at(T1), _valid_to: null, _deleted: false, _deleted_at: null },
      { id: 3, name: null, _valid_from: at(T3), _valid_to: null, _deleted: true, _deleted_at: at(T3) },
    ])
    const tags = await sql<{ tags: unknown }>`
      select _raw -> 'tags' as tags from history.crm_people where id = 1 order by _valid_from, _valid_to limit 1`.execute(
      db,
    )
    expect(tags.rows[0]?.tags).toEqual([{ id: 1, name: 'vip' }])

    // A tombstone again and a full resync of everything: nothing new.
    expect(await tombstone(db, people, [3], new Date(T4))).toEqual([])
    await upsertRecords(db, people, [person(1, T4, { name: 'Wieder' }), person(2, T1)], fetched())
    expect(await versions(db)).toHaveLength(7)
  })

  it('answers as of any time with the columns of the table, tombstones with _deleted_at', async () => {
    const { db } = database
    await upsertRecords(db, people, [person(1, T1), person(2, T2)], fetched())
    await upsertRecords(db, people, [person(1, T3, { name: 'Neu' })], fetched())
    await tombstone(db, people, [2], new Date(T4))

    expect(await asOf(db, '2024-03-01T09:59:59Z')).toEqual([])
    expect(await asOf(db, T1)).toEqual([{ id: 1, name: 'Mustermann', deleted: false }])
    expect(await asOf(db, '2024-03-01T12:59:59.999Z')).toEqual([
      { id: 1, name: 'Neu', deleted: false },
      { id: 2, name: 'Mustermann', deleted: false },
    ])
    expect(await asOf(db, T4)).toEqual([
      { id: 1, name: 'Neu', deleted: false },
      { id: 2, name: 'Mustermann', deleted: true },
    ])
    // As of now, the mirror itself: every column, in the table's order.
    const now = await sql`select * from history.crm_people_as_of(now()) order by id`.execute(db)
    const mirror = await sql`select * from crm.people order by id`.execute(db)
    expect(now.rows).toEqual(mirror.rows)
    expect(now.rows.length).toBe(2)
  })

  it('never lets a version begin before the current one: the one it replaces then covers no instant', async () => {
    const { db } = database
    await upsertRecords(db, people, [person(1, T2)], fetched(new Date(T2)))
    // Found deleted at T3, then fetched after all (the deletion was a mistake): its updated_at is older.
    await tombstone(db, people, [1], new Date(T3), { fetched: true })
    await upsertRecords(db, people, [person(1, T2, { name: 'Zurück' })], fetched(new Date(T4)))
    expect(await versions(db)).toEqual([
      {
        id: 1,
        name: 'Mustermann',
        _valid_from: at(T2),
        _valid_to: at(T3),
        _deleted: false,
        _deleted_at: null,
      },
      {
        id: 1,
        name: 'Mustermann',
        _valid_from: at(T3),
        _valid_to: at(T3),
        _deleted: true,
        _deleted_at: at(T3),
      },
      { id: 1, name: 'Zurück', _valid_from: at(T3), _valid_to: null, _deleted: false, _deleted_at: null },
    ])
    expect(await asOf(db, T3)).toEqual([{ id: 1, name: 'Zurück', deleted: false }])
    const backwards = await sql<{ n: number }>`
      select count(*)::int as n from history.crm_people where _valid_to < _valid_from`.execute(db)
    expect(backwards.rows[0]?.n).toBe(0)
  })

  it('dates versions of a resource without updated_at by the write, and soft deletions by their mark', async () => {
    const { db } = database
    await upsertRecords(db, users, [{ id: 7, name: 'Anna' }], fetched())
    await upsertRecords(db, users, [{ id: 7, name: 'Anna' }], fetched())
    await upsertRecords(db, users, [{ id: 7, name: 'Anne' }], fetched())
    const { rows } = await sql<{ name: string; from: Date; synced: Date; to: Date | null }>`
      select name, _valid_from as from, _synced_at as synced, _valid_to as to from history.crm_users
      order by _valid_from, _valid_to nulls last`.execute(db)
    expect(rows.map((row) => row.name)).toEqual(['Anna', 'Anne'])
    expect(rows.every((row) => row.from.getTime() === row.synced.getTime())).toBe(true)
    expect(rows[0]?.to).toEqual(rows[1]?.from)

    const contact = { id: 5, first: 'Eva', updated_at: T1, deleted_at: null }
    await upsertRecords(db, contacts, [contact], fetched())
    await upsertRecords(db, contacts, [{ ...contact, updated_at: T3, deleted_at: T2 }], fetched())
    const soft = await sql<{ from: string; to: string | null; deleted: boolean }>`
      select _valid_from::text as from, _valid_to::text as to, _deleted as deleted
      from history.reservations_contacts order by _valid_from`.execute(db)
    expect(soft.rows.map((v) => [v.from, v.to, v.deleted])).toEqual([
      [at(T1), at(T2), false],
      [at(T2), null, true],
    ])
  })
})

describe('keeping history', () => {
  it('costs one query when current, and puts back a trigger disabled or dropped', async () => {
    const { db } = database
    // Nothing differs, comments included (a column of reservations_contacts_versions has a key of 64 bytes).
    expect(await inspectHistory(db)).toMatchObject({ state: 'current' })
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 0 })
    await sql`alter table crm.people disable trigger history_update`.execute(db)
    await sql`drop trigger history_insert on crm.deals`.execute(db)
    expect(await inspectHistory(db)).toEqual({
      state: 'pending',
      detail:
        'history out of date: writes of crm.people, crm.deals make no version (triggers); the next start ' +
        'or migrate brings it in line',
    })
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 2 })
    await upsertRecords(db, people, [person(1, T1)], fetched())
    await upsertRecords(db, people, [person(1, T2, { name: 'Neu' })], fetched())
    expect((await versions(db)).map((v) => v.name)).toEqual(['Mustermann', 'Neu'])
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 0 })
  })

  it('fills the history of an install upgraded to it from the mirror as it is', async () => {
    const { db } = database
    await sql`drop schema history cascade`.execute(db)
    // Written before history existed: no trigger wrote a version of them.
    await upsertRecords(db, people, [person(1, T1), person(2, T1), person(4, T1)], fetched())
    await upsertRecords(db, people, [person(2, T2, { name: 'Neu' })], fetched())
    await tombstone(db, people, [4, 9], new Date(T3))
    await upsertRecords(db, users, [{ id: 7, name: 'Anna' }], fetched())

    expect(await migrateToLatest(db)).toEqual([])
    expect(await versions(db)).toEqual([
      { id: 1, name: 'Mustermann', _valid_from: at(T1), _valid_to: null, _deleted: false, _deleted_at: null },
      { id: 2, name: 'Neu', _valid_from: at(T2), _valid_to: null, _deleted: false, _deleted_at: null },
      // A tombstone: its last live state until the deletion, and the tombstone; a placeholder: the latter.
      {
        id: 4,
        name: 'Mustermann',
        _valid_from: at(T1),
        _valid_to: at(T3),
        _deleted: false,
        _deleted_at: null,
      },
      {
        id: 4,
        name: 'Mustermann',
        _valid_from: at(T3),
        _valid_to: null,
        _deleted: true,
        _deleted_at: at(T3),
      },
      { id: 9, name: null, _valid_from: at(T3), _valid_to: null, _deleted: true, _deleted_at: at(T3) },
    ])
    const user = await sql<{ same: boolean }>`
      select h._valid_from = u._synced_at as same from history.crm_users h join crm.users u using (id)`.execute(
      db,
    )
    expect(user.rows).toEqual([{ same: true }])
    const comments = await sql<{ n: number }>`
      select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'history' and c.relkind = 'r' and obj_description(c.oid, 'pg_class') is not null`.execute(
      db,
    )
    expect(comments.rows[0]?.n).toBe(15)
    // The views' comments are the data dictionary's (the dbt source history has the same).
    const described = await sql<{ view: number; columns: number; undescribed: number }>`
      select count(distinct c.oid)::int as view, count(*)::int as columns,
        count(*) filter (where col_description(c.oid, a.attnum) is null)::int as undescribed
      from pg_class c join pg_namespace n on n.oid = c.relnamespace join pg_attribute a on a.attrelid = c.oid
      where n.nspname = 'history' and c.relkind = 'v' and a.attnum > 0
        and obj_description(c.oid, 'pg_class') is not null`.execute(db)
    expect(described.rows[0]).toMatchObject({ view: 15, undescribed: 0 })
    const validTo = await sql<{ text: string }>`
      select col_description('history.crm_people'::regclass, a.attnum) as text from pg_attribute a
      where a.attrelid = 'history.crm_people'::regclass and a.attname = '_valid_to'`.execute(db)
    expect(validTo.rows[0]?.text).toBe(
      historyViews[0]?.columns.find((c) => c.name === '_valid_to')?.description,
    )
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 0 })
  })

  it('moves the versions of the layout before (a table closed by updates) into the versions table', async () => {
    const { db } = database
    await sql`drop schema history cascade`.execute(db)
    await upsertRecords(db, people, [person(1, T3, { name: 'Jetzt' })], fetched())
    // The layout before: history.crm_people a table, each version closed by an update of _valid_to; its
    // rows in no particular order.
    await sql`create schema history`.execute(db)
    await sql`create table history.crm_people (like crm.people)`.execute(db)
    await sql`alter table history.crm_people add column _valid_from timestamptz not null,
      add column _valid_to timestamptz,
      add column _deleted boolean generated always as (_deleted_at is not null) stored`.execute(db)
    await sql`insert into history.crm_people (id, name, _raw, _synced_at, _version, _valid_from, _valid_to) values
      (1, 'Jetzt', '{}', now(), 3, ${T3}, null),
      (1, 'Zuerst', '{}', now(), 1, ${T1}, ${T2}),
      (1, 'Dann', '{}', now(), 2, ${T2}, ${T2}),
      (1, 'Danach', '{}', now(), 2, ${T2}, ${T3})`.execute(db)

    expect(await maintainHistory(db)).toMatchObject({ seeded: 4 })
    expect(await versions(db)).toEqual([
      { id: 1, name: 'Zuerst', _valid_from: at(T1), _valid_to: at(T2), _deleted: false, _deleted_at: null },
      { id: 1, name: 'Dann', _valid_from: at(T2), _valid_to: at(T2), _deleted: false, _deleted_at: null },
      { id: 1, name: 'Danach', _valid_from: at(T2), _valid_to: at(T3), _deleted: false, _deleted_at: null },
      { id: 1, name: 'Jetzt', _valid_from: at(T3), _valid_to: null, _deleted: false, _deleted_at: null },
    ])
    const kinds = await sql<{ kind: string }>`
      select relkind::text as kind from pg_class where oid = 'history.crm_people'::regclass`.execute(db)
    expect(kinds.rows).toEqual([{ kind: 'v' }])
    await upsertRecords(db, people, [person(1, T4, { name: 'Später' })], fetched())
    expect((await versions(db)).map((v) => [v.name, v._valid_to])).toEqual([
      ['Zuerst', at(T2)],
      ['Dann', at(T2)],
      ['Danach', at(T3)],
      ['Jetzt', at(T4)],
      ['Später', null],
    ])
    expect(await maintainHistory(db)).toEqual({ created: [], seeded: 0, statements: 0 })
  })

  it('keeps what users built on the view when the main table gains a column', async () => {
    const { db } = database
    await sql`create view public.names_over_time as select id, name, _valid_from from history.crm_people`.execute(
      db,
    )
    try {
      await sql`alter table crm.people add column nickname text`.execute(db)
      const changes = await maintainHistory(db)
      expect(changes.statements).toBeGreaterThanOrEqual(3) // the column, the view, the trigger function
      await upsertRecords(db, people, [person(1, T1)], fetched())
      await sql`update crm.people set nickname = 'Maxi' where id = 1`.execute(db)
      const { rows } = await sql<{ nickname: string | null; _valid_to: Date | null }>`
        select nickname, _valid_to from history.crm_people where id = 1 order by _valid_from, _valid_to nulls last`.execute(
        db,
      )
      expect(rows.map((row) => row.nickname)).toEqual([null, 'Maxi'])
      const columns = await sql<{ name: string }>`
        select attname as name from pg_attribute where attrelid = 'history.crm_people'::regclass and attnum > 0
        order by attnum desc limit 1`.execute(db)
      expect(columns.rows).toEqual([{ name: 'nickname' }])
      expect((await sql`select * from public.names_over_time`.execute(db)).rows).toHaveLength(2)
    } finally {
      await sql`drop view if exists public.names_over_time`.execute(db)
      await sql`alter table crm.people drop column if exists nickname`.execute(db)
    }
  })
})
