// Migrations on an empty database, re-runs, concurrent replicas, and agreement between the
// migrated schema and the resource table that the store writes through.
import { sql } from 'kysely'
import type pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { childTables, resources } from '../src/resources/index.ts'
import { createDb, createPool } from '../src/store/database.ts'
import { migrateToLatest, migrationFileCount, pendingMigrations } from '../src/store/migrate.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from './support/database.ts'

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
        'sync.resource_state',
        'sync.runs',
        'sync.run_resources',
        'sync.inbox',
      ]),
    )
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
