// The data dictionary in the database: a comment on every mirror table and column, and the live views
// (crm_live, reservations_live), applied after the migrations, again only where they differ.
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect, it, vi } from 'vitest'
import type { Logger } from '../../src/log.ts'
import { filterGroups } from '../../src/resources/crm-filter-groups.ts'
import { liveViews, mirrorTables, RESERVED_WORD_ALIASES } from '../../src/resources/dictionary/index.ts'
import { companies, contacts, people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { applyDictionary } from '../../src/store/dictionary.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'

const created: TestDatabase[] = []
afterAll(async () => {
  await Promise.all(created.map(dropTestDatabase))
})

interface ColumnComment {
  relation: string
  column: string | null
  comment: string | null
}

/** Every relation (kind: 'r' tables, 'v' views) of the schemas, and each of its columns, with its comment. */
async function comments(db: Db, schemas: string[], kind: 'r' | 'v'): Promise<ColumnComment[]> {
  const { rows } = await sql<ColumnComment>`
    select n.nspname || '.' || c.relname as relation, null as column,
      obj_description(c.oid, 'pg_class') as comment
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${schemas}) and c.relkind = ${kind}
    union all
    select n.nspname || '.' || c.relname, a.attname, col_description(c.oid, a.attnum)
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${schemas}) and c.relkind = ${kind} and a.attnum > 0 and not a.attisdropped
    order by 1, 2 nulls first`.execute(db)
  return rows
}

const blank = (rows: ColumnComment[]) =>
  rows.filter((row) => !row.comment?.trim()).map((row) => `${row.relation}.${row.column ?? '(table)'}`)

const quietLogger = () =>
  ({ info: vi.fn(), warn: vi.fn() }) as unknown as Logger & { warn: ReturnType<typeof vi.fn> }

describe('migrating an empty database', () => {
  it('comments every table and column of crm and reservations, every live view and column', async () => {
    const database = await createTestDatabase({ empty: true })
    created.push(database)
    await migrateToLatest(database.db)

    const tables = await comments(database.db, ['crm', 'reservations'], 'r')
    expect(tables.length).toBeGreaterThan(200)
    expect(blank(tables)).toEqual([])
    // Every table the migrations create is in the dictionary, and nothing else is.
    const relations = [...new Set(tables.map((row) => row.relation))].sort()
    expect(relations).toEqual(mirrorTables.map((table) => table.name).sort())

    const views = await comments(database.db, ['crm_live', 'reservations_live'], 'v')
    expect(blank(views)).toEqual([])
    expect([...new Set(views.map((row) => row.relation))].sort()).toEqual(
      liveViews.map((view) => `${view.schema}.${view.name}`).sort(),
    )
    // The comments are the dictionary's.
    const gender = tables.find((row) => row.relation === 'crm.people' && row.column === 'gender')
    expect(gender?.comment).toContain('female_user')
    const schemas = await sql<{ name: string; comment: string | null }>`
      select nspname as name, obj_description(oid, 'pg_namespace') as comment from pg_namespace
      where nspname in ('crm', 'reservations', 'crm_live', 'reservations_live') order by 1`.execute(
      database.db,
    )
    expect(schemas.rows.map((row) => [row.name, Boolean(row.comment)])).toEqual([
      ['crm', true],
      ['crm_live', true],
      ['reservations', true],
      ['reservations_live', true],
    ])
  })
})

describe('applying the dictionary again', () => {
  const database = useTestDatabase()

  it('writes nothing when nothing differs, and puts back a comment changed or a view dropped', async () => {
    const { db } = database
    expect(await applyDictionary(db)).toEqual({ views: 0, comments: 0 })

    await sql`comment on column crm.people.gender is 'mine'`.execute(db)
    await sql`comment on table reservations.bookings is null`.execute(db)
    await sql`drop view crm_live.tags`.execute(db)
    const tagComments =
      1 +
      (liveViews.find((view) => view.name === 'tags' && view.schema === 'crm_live')?.columns.length as number)
    expect(await applyDictionary(db)).toEqual({ views: 1, comments: 2 + tagComments })
    const { rows } = await sql<{ gender: string; bookings: string; tags: string | null }>`
      select col_description('crm.people'::regclass, 2) as gender,
        obj_description('reservations.bookings'::regclass, 'pg_class') as bookings,
        obj_description('crm_live.tags'::regclass, 'pg_class') as tags`.execute(db)
    expect(rows[0]?.bookings).toMatch(/^Bookings/)
    expect(rows[0]?.tags).toMatch(/^Rows of crm.tags whose parent record is live/)
    const gender = await sql<{ comment: string }>`
      select col_description(attrelid, attnum) as comment from pg_attribute
      where attrelid = 'crm.people'::regclass and attname = 'gender'`.execute(db)
    expect(gender.rows[0]?.comment).not.toBe('mine')
    expect(await applyDictionary(db)).toEqual({ views: 0, comments: 0 })
  })

  it('drops and creates again a view that cannot be replaced in place, with its comments', async () => {
    const { db } = database
    await sql`drop view crm_live.users`.execute(db)
    await sql`create view crm_live.users as select name, id from crm.users`.execute(db)
    const changes = await applyDictionary(db)
    expect(changes.views).toBe(1)
    const { rows } = await sql<{ column: string; comment: string | null }>`
      select attname as column, col_description(attrelid, attnum) as comment from pg_attribute
      where attrelid = 'crm_live.users'::regclass and attnum > 0 order by attnum`.execute(db)
    expect(rows.map((row) => row.column)).toEqual([
      'id',
      'first',
      'name',
      'login',
      '_raw',
      '_synced_at',
      '_source',
      '_fetched_at',
      '_version',
    ])
    expect(rows.every((row) => row.comment)).toBe(true)
  })

  it('replaces the views of a live schema whose definitions changed (its comment has a hash)', async () => {
    const { db } = database
    await sql`comment on schema reservations_live is 'Definitions 000000000000.'`.execute(db)
    const changes = await applyDictionary(db)
    expect(changes.views).toBe(liveViews.filter((view) => view.schema === 'reservations_live').length)
    expect(await applyDictionary(db)).toEqual({ views: 0, comments: 0 })
  })

  it("leaves the views to the next start, with a warning, when a user's view blocks a drop", async () => {
    const { db } = database
    await sql`drop view crm_live.users`.execute(db)
    await sql`create view crm_live.users as select name, id from crm.users`.execute(db)
    await sql`create view public.my_users as select * from crm_live.users`.execute(db)
    await sql`comment on column crm.users.login is 'mine'`.execute(db)
    const logger = quietLogger()
    expect(await applyDictionary(db, logger)).toEqual({ views: 0, comments: 0 })
    expect(String(logger.warn.mock.calls[0]?.[1])).toMatch(
      /live views and comments not updated, .*cannot drop view crm_live.users because other objects depend/,
    )
    // Nothing half done: the transaction wrote nothing.
    const login = await sql<{ comment: string }>`
      select col_description(attrelid, attnum) as comment from pg_attribute
      where attrelid = 'crm.users'::regclass and attname = 'login'`.execute(db)
    expect(login.rows[0]?.comment).toBe('mine')

    await sql`drop view public.my_users`.execute(db)
    expect((await applyDictionary(db, logger)).views).toBe(1)
  })

  it('gives up on a view a report holds, with a warning, rather than keep the start waiting', async () => {
    const { db } = database
    await sql`comment on schema crm_live is 'Definitions 000000000000.'`.execute(db)
    const report = new pg.Client({ connectionString: database.url })
    await report.connect()
    await report.query('begin')
    await report.query('select count(*) from crm_live.people')
    try {
      const logger = quietLogger()
      const started = Date.now()
      expect(await applyDictionary(db, logger)).toEqual({ views: 0, comments: 0 })
      expect(Date.now() - started).toBeLessThan(8_000)
      expect(String(logger.warn.mock.calls[0]?.[1])).toMatch(/a lock was held for over 3 s/)
    } finally {
      await report.query('rollback')
      await report.end()
    }
    expect((await applyDictionary(db)).views).toBeGreaterThan(0)
  }, 20_000)
})

describe('the live views', () => {
  const database = useTestDatabase()
  const fetched = () => ({ source: 'fetch' as const, fetchedAt: new Date() })
  const stamp = '2024-01-01T00:00:00Z'
  const tag = (id: number, name: string) => ({ id, name })

  it('show the live rows, and the children of live parents only', async () => {
    const { db } = database
    const address = (id: number, primary: boolean) => ({ id, city: `city ${id}`, primary })
    await upsertRecords(
      db,
      people,
      [
        {
          id: 1,
          name: 'live',
          updated_at: stamp,
          tags: [tag(11, 'a')],
          addrs: [address(101, true)],
          user: { id: 7 },
        },
        { id: 2, name: 'gone', updated_at: stamp, tags: [tag(12, 'b')], addrs: [address(102, false)] },
      ],
      fetched(),
    )
    // A company with the id of the deleted person: its tags are a live parent's.
    await upsertRecords(
      db,
      companies,
      [{ id: 2, name: 'firm', updated_at: stamp, tags: [tag(13, 'c')] }],
      fetched(),
    )
    await upsertRecords(
      db,
      contacts,
      [
        { id: 5, last: 'live', updated_at: stamp, tags: [tag(21, 'x')] },
        { id: 6, last: 'gone', updated_at: stamp, tags: [tag(22, 'y')] },
      ],
      fetched(),
    )
    await tombstone(db, people, [2])
    await tombstone(db, contacts, [6])

    const ids = async (query: ReturnType<typeof sql<{ id: number }>>) =>
      (await query.execute(db)).rows.map((row) => Number(row.id))
    expect(await ids(sql`select id from crm.people order by id`)).toEqual([1, 2])
    expect(await ids(sql`select id from crm_live.people order by id`)).toEqual([1])
    expect(await ids(sql`select id from crm.tags order by id`)).toEqual([11, 12, 13])
    expect(await ids(sql`select id from crm_live.tags order by id`)).toEqual([11, 13])
    expect(await ids(sql`select id from crm_live.addresses order by id`)).toEqual([101])
    expect(await ids(sql`select id from reservations_live.contacts order by id`)).toEqual([5])
    expect(await ids(sql`select id from reservations_live.contact_tags order by id`)).toEqual([21])

    // Reserved words: the column under its upstream name, and beside it a name that needs no quotes.
    const person = await sql<{ user: unknown; responsible_user: unknown }>`
      select "user", responsible_user from crm_live.people`.execute(db)
    expect(person.rows).toEqual([{ user: { id: 7 }, responsible_user: { id: 7 } }])
    const addressRow = await sql<{ primary: boolean; is_primary: boolean }>`
      select "primary", is_primary from crm_live.addresses`.execute(db)
    expect(addressRow.rows).toEqual([{ primary: true, is_primary: true }])
    // No _deleted_at in a live view: it is null in every row there.
    const columns = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.columns
      where table_schema like '%_live' and column_name = '_deleted_at'`.execute(db)
    expect(columns.rows[0]?.n).toBe(0)
  })

  it('show the members of live groups only', async () => {
    const { db } = database
    await upsertRecords(
      db,
      filterGroups,
      [
        { id: 1, name: 'kept', model_type: 'Person', updated_at: stamp },
        { id: 2, name: 'gone', model_type: 'Person', updated_at: stamp },
      ],
      fetched(),
    )
    await sql`insert into crm.filter_group_members (filter_group_id, member_resource, member_id)
      values (1, 'crm.people', 1), (2, 'crm.people', 1), (2, 'crm.people', 3)`.execute(db)
    await tombstone(db, filterGroups, [2])
    const { rows } = await sql<{ filter_group_id: number; member_id: number }>`
      select filter_group_id, member_id from crm_live.filter_group_members order by 1, 2`.execute(db)
    expect(rows).toEqual([{ filter_group_id: 1, member_id: 1 }])
  })

  it('give every column named with a reserved word of PostgreSQL a safe name beside it', async () => {
    const { rows } = await sql<{ word: string }>`
      select word from pg_get_keywords() where catcode in ('R', 'T')`.execute(database.db)
    const reserved = new Set(rows.map((row) => row.word))
    const named = mirrorTables.flatMap((table) =>
      table.columns
        .filter((column) => reserved.has(column.name))
        .map((column) => `${table.name}.${column.name}`),
    )
    expect(named.sort()).toEqual(['crm.addresses.primary', 'crm.contact_details.primary', 'crm.people.user'])
    for (const name of named) {
      const [schema, table, column] = name.split('.') as [string, string, string]
      const alias = RESERVED_WORD_ALIASES[column] as string
      expect(reserved.has(alias), alias).toBe(false)
      const view = liveViews.find(
        (candidate) => candidate.schema === `${schema}_live` && candidate.name === table,
      )
      const names = view?.columns.map((candidate) => candidate.name) ?? []
      expect(names.indexOf(alias), name).toBe(names.indexOf(column) + 1)
    }
  })
})
