// Migrations on an empty database, re-runs, concurrent replicas, and agreement between the
// migrated schema and the resource table that the store writes through.
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { removeStrayChildren } from '../../migrations/0007_children_match_parents.ts'
import {
  up as addChildKeys,
  CHILD_TABLES,
  down as dropChildKeys,
} from '../../migrations/0018_child_primary_keys.ts'
import { CHILD_TABLES as CONNECTIONS } from '../../migrations/0024_avatars_connections.ts'
import { CHILD_TABLES as PERSON_DETAILS } from '../../migrations/0025_person_details.ts'
import { childTables, deals, people, resources } from '../../src/resources/index.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import {
  MIGRATION_LOCK_TIMEOUT_MS,
  migrateToLatest,
  migrationFileCount,
  pendingMigrations,
} from '../../src/store/migrate.ts'
import { upsertRecords } from '../../src/store/records.ts'
import type { Database } from '../../src/store/schema.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'
import { settledWithin } from '../support/process.ts'

const created: TestDatabase[] = []
afterAll(async () => {
  await Promise.all(created.map(dropTestDatabase))
})

async function emptyDatabase() {
  const database = await createTestDatabase({ empty: true })
  created.push(database)
  return database
}

describe('migrations', () => {
  it('apply to an empty database, and a second run applies nothing', async () => {
    const { db } = await emptyDatabase()
    const applied = await migrateToLatest(db)
    expect(applied).toHaveLength(await migrationFileCount())
    expect(await migrateToLatest(db)).toEqual([])
    expect(await pendingMigrations(db)).toEqual([])
  })

  it('are safe when several replicas start at once', async () => {
    const { url } = await emptyDatabase()
    // three pools on one database, as three starting processes would have
    const pools = [createPool(url), createPool(url), createPool(url)]
    try {
      const results = await Promise.all(pools.map((pool) => migrateToLatest(createDb(pool))))
      // every migration applied exactly once, by whichever replica got the lock first
      expect(results.flat().sort()).toHaveLength(await migrationFileCount())
      expect(new Set(results.flat()).size).toBe(await migrationFileCount())
      expect(await pendingMigrations(createDb(pools[0] as pg.Pool))).toEqual([])
    } finally {
      await Promise.all(pools.map((pool) => pool.end()))
    }
  })

  it("read the catalog of their own schema only, so that an account's start does not grow with the others", async () => {
    const database = await createTestDatabase()
    created.push(database)
    const { db: migrated, pool } = database
    // Kysely's Migrator, left to itself, reads every column of every table of the database
    // (pg_attribute) to learn whether its two tables exist: with twenty accounts, 1.6 s an account.
    const statements: string[] = []
    const logged = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        statements.push(event.query.sql)
      },
    })
    const account = forAccount(logged, accountSchemas('north'))
    expect(await migrateToLatest(account)).toHaveLength(await migrationFileCount())
    expect(await migrateToLatest(account)).toEqual([])
    // Kysely's introspection builds its catalog query, so its names are quoted.
    expect(statements.filter((text) => text.includes('"pg_catalog"."pg_attribute"'))).toEqual([])
    expect(await pendingMigrations(account)).toEqual([])
    expect(await pendingMigrations(migrated)).toEqual([])
  })

  it('fail loudly when a migration fails', async () => {
    const { db } = await emptyDatabase()
    await sql`create schema crm`.execute(db) // the first migration creates it and must fail
    await expect(migrateToLatest(db)).rejects.toThrow(
      /migration 0001_mirror failed: .*schema "crm" already exists/,
    )
    // nothing half-applied: the migrations run in one transaction
    const tables = await sql<{
      n: number
    }>`select count(*)::int as n from information_schema.tables where table_schema = 'crm'`.execute(db)
    expect(tables.rows[0]?.n).toBe(0)
  })

  it('give up on a table another session holds locked, instead of queueing its queries behind them', async () => {
    const database = await createTestDatabase()
    created.push(database)
    const { db } = database
    // 0007 and later pending again; 0007 begins by altering crm.people
    const later = await sql<{ name: string }>`
      delete from sync.kysely_migration where name >= '0007' returning name
    `.execute(db)
    // a report that reads crm.people in a long transaction
    const report = new pg.Client({ connectionString: database.url })
    await report.connect()
    await report.query('begin')
    await report.query('select count(*) from crm.people')
    try {
      const started = Date.now()
      const outcome = await settledWithin(migrateToLatest(db), 13_000)
      expect(outcome).toMatchObject({ status: 'rejected' })
      expect(String((outcome as { reason: unknown }).reason)).toMatch(
        /migration 0007_children_match_parents failed: canceling statement due to lock timeout \(another session held a lock on a table it changes for over 3 s/,
      )
      expect(Date.now() - started).toBeLessThan(8_000)
    } finally {
      await report.query('rollback')
      await report.end()
    }
    // nothing half-applied, and the next start applies them all
    expect(await pendingMigrations(db)).toEqual(later.rows.map((row) => row.name).sort())
    expect(MIGRATION_LOCK_TIMEOUT_MS).toBe(3_000)
  }, 30_000)
})

describe('the migrated schema', () => {
  const database = useTestDatabase()

  async function columnsOf(qualified: string) {
    const [schema, table] = qualified.split('.')
    const result = await sql<{ column_name: string; data_type: string; is_nullable: string }>`
      select column_name, data_type, is_nullable from information_schema.columns
      where table_schema = ${schema} and table_name = ${table} order by ordinal_position
    `.execute(database.db)
    return new Map(result.rows.map((row) => [row.column_name, row]))
  }

  const sqlName: Record<string, string> = {
    bigint: 'bigint',
    integer: 'integer',
    text: 'text',
    numeric: 'numeric',
    boolean: 'boolean',
    timestamptz: 'timestamp with time zone',
    date: 'date',
    jsonb: 'jsonb',
  }

  it.each(resources.map((resource) => [resource.name, resource] as const))(
    '%s has every column of the resource table, typed, plus the engine columns',
    async (name, resource) => {
      const columns = await columnsOf(name)
      for (const [column, definition] of Object.entries(resource.columns)) {
        expect(columns.get(column)?.data_type, `${name}.${column}`).toBe(sqlName[definition.type])
      }
      expect(columns.get('id')?.is_nullable).toBe('NO')
      expect(columns.get('_raw')?.data_type).toBe('jsonb')
      expect(columns.get('_synced_at')?.data_type).toBe('timestamp with time zone')
      expect(columns.get('_deleted_at')?.data_type).toBe('timestamp with time zone')
      const unknown = [...columns.keys()].filter(
        (column) => !column.startsWith('_') && !(column in resource.columns),
      )
      expect(unknown, `columns of ${name} that the resource table does not know`).toEqual([])
    },
  )

  it.each(childTables.map((child) => [child.table, child] as const))(
    '%s has every column of its child definition, typed',
    async (name, child) => {
      const columns = await columnsOf(name)
      for (const [column, definition] of Object.entries(child.columns)) {
        expect(columns.get(column)?.data_type, `${name}.${column}`).toBe(sqlName[definition.type])
      }
      for (const engine of ['_parent_resource', '_parent_id', '_ordinal', '_raw', '_synced_at']) {
        expect(columns.has(engine), `${name}.${engine}`).toBe(true)
      }
      const unknown = [...columns.keys()].filter(
        (column) => !column.startsWith('_') && !(column in child.columns),
      )
      expect(unknown).toEqual([])
    },
  )

  it('has the tables of the outside contract and of the engine state', async () => {
    const result = await sql<{ name: string }>`
      select table_schema || '.' || table_name as name from information_schema.tables
      where table_schema in ('crm', 'reservations', 'sync') order by 1
    `.execute(database.db)
    expect(result.rows.map((row) => row.name)).toEqual(
      expect.arrayContaining([
        'crm.people',
        'crm.companies',
        'crm.deals',
        'crm.projects',
        'crm.tasks',
        'crm.users',
        'reservations.contacts',
        'reservations.bookings',
        'crm.tags',
        'crm.addresses',
        'crm.contact_details',
        'crm.positions',
        'crm.custom_fields',
        'crm.deal_people',
        'crm.project_people',
        'crm.connections',
        'sync.resource_state',
        'sync.runs',
        'sync.run_resources',
        'sync.inbox',
      ]),
    )
  })

  it('gives every mirror table a primary key; a child table the place of the item in its parent', async () => {
    const { rows } = await sql<{ table: string; key: string[] | null }>`
      select n.nspname || '.' || c.relname as table,
        (select array_agg(a.attname::text order by k.position)
         from pg_index i cross join unnest(i.indkey) with ordinality k(attnum, position)
         join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
         where i.indrelid = c.oid and i.indisprimary) as key
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('crm', 'reservations') and c.relkind in ('r', 'p')
      order by 1`.execute(database.db)
    expect(rows.filter((row) => row.key === null).map((row) => row.table)).toEqual([])
    const keys = new Map(rows.map((row) => [row.table, row.key?.join(', ')]))
    // Every child table of the resource table: the frozen list of the migration that keyed them, and
    // those created since with their key.
    expect([...CHILD_TABLES, ...CONNECTIONS, ...PERSON_DETAILS].sort()).toEqual(
      childTables.map((child) => child.table).sort(),
    )
    for (const child of childTables)
      expect(keys.get(child.table), child.table).toBe('_parent_resource, _parent_id, _ordinal')
    for (const resource of resources) expect(keys.get(resource.name), resource.name).toBe('id')
    expect(keys.get('crm.filter_group_members')).toBe('filter_group_id, member_resource, member_id')
    expect(rows).toHaveLength(resources.length + childTables.length + 1)
  })

  it('indexes updated_at and the live rows of every table that has them', async () => {
    const result = await sql<{ table: string; definition: string }>`
      select schemaname || '.' || tablename as table, indexdef as definition from pg_indexes
      where schemaname in ('crm', 'reservations')
    `.execute(database.db)
    for (const resource of resources) {
      const definitions = result.rows
        .filter((row) => row.table === resource.name)
        .map((row) => row.definition)
      expect(
        definitions.some((d) => d.includes('WHERE (_deleted_at IS NULL)')),
        resource.name,
      ).toBe(true)
      if ('updated_at' in resource.columns) {
        expect(
          definitions.some((d) => d.endsWith('(updated_at)')),
          resource.name,
        ).toBe(true)
      }
    }
  })
})

describe('migration 0007', () => {
  const database = useTestDatabase()
  const fetched = () => ({ source: 'fetch' as const, fetchedAt: new Date() })
  const person = (id: number, updatedAt: string, extra: Record<string, unknown>) => ({
    id,
    name: `person ${id}`,
    updated_at: updatedAt,
    ...extra,
  })
  const tag = (id: number, name: string) => ({ id, name, attachable_type: 'Person', attachable_id: 1 })

  async function rows(table: string, parent: string) {
    const result = await sql<{ row: string }>`
      select _parent_id || ':' || _ordinal || ' ' || coalesce(name, '-') as row from ${sql.table(table)}
      where _parent_resource = ${parent} order by _parent_id, _ordinal, name`.execute(database.db)
    return result.rows.map((r) => r.row)
  }

  it("removes the child rows that are not their parent record's items, and extra copies of those that are", async () => {
    const { db } = database
    // The tables as 0007 found them: without the keys of 0018, which refuse the copies below.
    await dropChildKeys(db)
    await upsertRecords(
      db,
      people,
      [person(1, '2024-01-01T00:00:00Z', { tags: [tag(1, 'a'), tag(2, 'b')] })],
      fetched(),
    )
    // Person 2's record last came without includes: its children are those of an earlier record.
    await upsertRecords(db, people, [person(2, '2024-01-01T00:00:00Z', { tags: [tag(3, 'c')] })], fetched())
    await upsertRecords(db, people, [person(2, '2024-01-02T00:00:00Z', {})], fetched())
    // Contact details number their rows across tels, emails and homepages.
    const details = {
      tels: [{ id: 5, name: '+49 1' }],
      emails: ['not an object', { id: 6, name: 'p@example.com' }],
      homepages: [],
    }
    await upsertRecords(db, people, [person(3, '2024-01-01T00:00:00Z', details)], fetched())
    await upsertRecords(
      db,
      deals,
      [{ id: 1, name: 'Deal', updated_at: '2024-01-01T00:00:00Z', people: [{ id: 1, name: 'P' }] }],
      fetched(),
    )
    // What a race between two writers of one parent could leave (person 1's other writer had "x", "y"),
    // an exact copy of a right row, and a stray row of the deal.
    await sql`
      insert into crm.tags (_parent_resource, _parent_id, _ordinal, id, name, _raw)
      values ('crm.people', 1, 0, 9, 'x', '{"id": 9, "name": "x"}'), ('crm.people', 1, 2, 10, 'y', '{"id": 10, "name": "y"}');
      insert into crm.tags select * from crm.tags where _parent_id = 1 and name = 'b';
      -- the right row of place 0 now stands after the stray one
      update crm.tags set _synced_at = _synced_at where _parent_id = 1 and name = 'a';
      insert into crm.deal_people (_parent_resource, _parent_id, _ordinal, deal_id, person_id, name, _raw)
      values ('crm.deals', 1, 0, 1, 2, 'Q', '{"id": 2, "name": "Q"}')
    `.execute(db)
    const detailsBefore = await rows('crm.contact_details', 'crm.people')
    expect(detailsBefore).toEqual(['3:0 +49 1', '3:1 p@example.com'])

    await removeStrayChildren(db)

    expect(await rows('crm.tags', 'crm.people')).toEqual(['1:0 a', '1:1 b', '2:0 c'])
    expect(await rows('crm.contact_details', 'crm.people')).toEqual(detailsBefore)
    expect(await rows('crm.deal_people', 'crm.deals')).toEqual(['1:0 P'])
  })
})

describe('migration 0018', () => {
  const database = useTestDatabase()

  it('keys every child table, keeping the newest of the rows that share a place', async () => {
    const { db } = database
    await upsertRecords(
      db,
      people,
      [
        {
          id: 1,
          name: 'P',
          updated_at: '2024-01-01T00:00:00Z',
          tags: [
            { id: 1, name: 'a' },
            { id: 2, name: 'b' },
          ],
        },
      ],
      { source: 'fetch', fetchedAt: new Date() },
    )
    await dropChildKeys(db)
    // Copies at one place, as an old race could leave them where the parent's last write had no tags.
    await sql`
      insert into crm.tags (_parent_resource, _parent_id, _ordinal, id, name, _raw, _synced_at)
      values ('crm.people', 1, 0, 1, 'a (older)', '{}', now() - interval '1 day'),
        ('crm.people', 1, 1, 2, 'b (newer)', '{}', now() + interval '1 second'),
        ('crm.people', 2, 0, 3, 'c', '{}', now()), ('crm.people', 2, 0, 3, 'c', '{}', now());
      insert into reservations.contact_tags (_parent_resource, _parent_id, _ordinal, id, name, _raw)
      values ('reservations.contacts', 1, 0, 1, 'x', '{}'), ('reservations.contacts', 1, 0, 1, 'x', '{}')
    `.execute(db)
    const indexes = async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_indexes
        where schemaname in ('crm', 'reservations') and indexdef like '%(_parent_resource, _parent_id)'`.execute(
        db,
      )
      return rows[0]?.n
    }
    expect(await indexes()).toBe(CHILD_TABLES.length)

    await addChildKeys(db)

    const { rows } = await sql<{ row: string }>`
      select _parent_id || ':' || _ordinal || ' ' || name as row from crm.tags order by 1`.execute(db)
    expect(rows.map((row) => row.row)).toEqual(['1:0 a', '1:1 b (newer)', '2:0 c'])
    const contactTags = await sql<{
      n: number
    }>`select count(*)::int as n from reservations.contact_tags`.execute(db)
    expect(contactTags.rows[0]?.n).toBe(1)
    // The key's index stands for the one on (_parent_resource, _parent_id).
    expect(await indexes()).toBe(0)
    await expect(
      sql`insert into crm.tags (_parent_resource, _parent_id, _ordinal, _raw) values ('crm.people', 1, 0, '{}')`.execute(
        db,
      ),
    ).rejects.toThrow(/duplicate key value violates unique constraint "tags_pkey"/)
  })
})
