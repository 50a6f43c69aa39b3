// A database of its own for each test file, cloned from the migrated template (fast), dropped after.
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, inject } from 'vitest'
import { createDb, createPool, type Db } from '../../src/store/database.ts'
import { waitFor } from './process.ts'
import { databaseUrl } from './urls.ts'

export interface TestDatabase {
  name: string
  url: string
  pool: pg.Pool
  db: Db
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('serverUrl') })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** Creates a database: a clone of the migrated template, or empty with `{ empty: true }`. */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `crm_sync_test_${randomBytes(6).toString('hex')}`
  const template = options.empty ? 'template0' : inject('templateDatabase')
  await admin((client) => client.query(`create database ${name} template ${template}`))
  const url = databaseUrl(inject('serverUrl'), name)
  const pool = createPool(url, { max: 5 })
  // A connection still closing when the database is dropped reports 57P01; that is expected here.
  pool.on('error', () => {})
  return { name, url, pool, db: createDb(pool) }
}

export async function dropTestDatabase(database: TestDatabase): Promise<void> {
  await database.db.destroy() // ends the pool only if Kysely has used it
  if (!database.pool.ended) await database.pool.end()
  await admin((client) => client.query(`drop database if exists ${database.name} with (force)`))
}

/** Registers hooks that give the test file a migrated database; read it inside tests. */
export function useTestDatabase(): TestDatabase {
  const holder = {} as TestDatabase
  beforeAll(async () => {
    Object.assign(holder, await createTestDatabase())
  })
  afterAll(async () => {
    if (holder.db) await dropTestDatabase(holder)
  })
  return holder
}

/** Waits until a session of this test database waits for a lock (another transaction holds it). */
export async function waitForLockWaiter(db: Db, what: string, relation?: string): Promise<void> {
  await waitFor(
    async () => {
      // On a relation when named: a moment's wait on another lock (an advisory one) is not the one.
      const { rows } = relation
        ? await sql<{ n: number }>`
            select count(*)::int as n from pg_locks
            where not granted and relation = ${relation}::regclass`.execute(db)
        : await sql<{ n: number }>`
            select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`.execute(db)
      return (rows[0]?.n ?? 0) > 0 ? true : undefined
    },
    10_000,
    what,
  )
}
