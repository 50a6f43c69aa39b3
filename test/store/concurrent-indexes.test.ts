// Indexes that migrations declare as `concurrentIndexes`: built after the migrations commit, without
// locking writers out, and built again when an earlier build was interrupted.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { buildConcurrentIndexes, concurrentIndexesOf } from '../../src/store/concurrent-indexes.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  waitForLockWaiter,
} from '../support/database.ts'
import { settledWithin } from '../support/process.ts'

const created: TestDatabase[] = []
const folders: string[] = []
afterAll(async () => {
  await Promise.all(created.map(dropTestDatabase))
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })))
})

// A migration of its own: frozen migrations import only kysely, so this one imports nothing.
const MIGRATION = `
export async function up(db) {
  await db.schema.createSchema('scratch').execute()
  await db.schema.createTable('scratch.events').addColumn('id', 'integer').addColumn('kind', 'text').execute()
}
export const concurrentIndexes = [{ name: 'events_kind', table: 'scratch.events', definition: '(kind, id)' }]
`

async function database(): Promise<TestDatabase> {
  const database = await createTestDatabase({ empty: true })
  created.push(database)
  return database
}

async function migrationFolder(): Promise<string> {
  const folder = await mkdtemp(join(import.meta.dirname, '.migrations-'))
  folders.push(folder)
  await writeFile(join(folder, '0001_events.ts'), MIGRATION)
  return folder
}

async function indexState(db: TestDatabase['db'], name: string) {
  const { rows } = await sql<{ valid: boolean; definition: string }>`
    select i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ${name}`.execute(db)
  return rows[0]
}

describe('concurrent indexes', () => {
  it('are built after the migrations commit, while writers go on writing', async () => {
    const { db, url } = await database()
    const folder = await migrationFolder()
    await migrateToLatest(db, { folder })
    await sql`drop index scratch.events_kind`.execute(db)
    // A long transaction that wrote to the table: a build waits for it to end. A plain
    // `create index` would hold a lock meanwhile that every later insert queues behind.
    const writer = new pg.Client({ connectionString: url })
    await writer.connect()
    await writer.query('begin')
    await writer.query(`insert into scratch.events values (1, 'a')`)
    try {
      const migrating = migrateToLatest(db, { folder })
      await waitForLockWaiter(db, 'the index build waiting for the open transaction')
      const insert = await settledWithin(sql`insert into scratch.events values (2, 'b')`.execute(db), 3_000)
      expect(insert).toMatchObject({ status: 'fulfilled' })
      expect(await indexState(db, 'events_kind')).toMatchObject({ valid: false }) // not used while built
      await writer.query('commit')
      await migrating
    } finally {
      await writer.end()
    }
    expect(await indexState(db, 'events_kind')).toMatchObject({
      valid: true,
      definition: expect.stringContaining('(kind, id)'),
    })
  }, 30_000)

  it('are dropped and built again when an earlier build was interrupted', async () => {
    const { db } = await database()
    const folder = await migrationFolder()
    await migrateToLatest(db, { folder })
    // what an interrupted `create index concurrently` leaves behind
    await sql`update pg_index set indisvalid = false where indexrelid = 'scratch.events_kind'::regclass`.execute(
      db,
    )
    const index = { name: 'events_kind', table: 'scratch.events', definition: '(kind, id)' }
    expect(await buildConcurrentIndexes(db, [index])).toEqual(['events_kind'])
    expect(await indexState(db, 'events_kind')).toMatchObject({ valid: true })
    expect(await buildConcurrentIndexes(db, [index])).toEqual([])
  })

  it('refuse a declaration that is not an index on a qualified table', () => {
    expect(() =>
      concurrentIndexesOf([
        { module: { concurrentIndexes: [{ name: 'x; drop', table: 'a.b', definition: '(c)' }] } },
      ]),
    ).toThrow(/invalid concurrent index/)
    expect(() =>
      concurrentIndexesOf([
        { module: { concurrentIndexes: [{ name: 'x', table: 'events', definition: '(c)' }] } },
      ]),
    ).toThrow(/invalid concurrent index/)
    expect(concurrentIndexesOf([{ module: {} }])).toEqual([])
  })
})
