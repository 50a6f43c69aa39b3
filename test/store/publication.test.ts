// The logical replication publication of the mirror (issue 21): kept after the migrations, of every
// mirror table and nothing else, by the replicas in turn, left alone (with one warning) by a role that
// cannot keep it; and a real consumer, a `pgoutput` slot on a server with wal_level = logical, receives
// the store's inserts, updates and tombstones, and a rewrite as updates, never a truncate.
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/database/embedded-postgres.ts'
import type { Logger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import { createDb, createPool, type Db } from '../../src/store/database.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { inspectPublication, maintainPublication, publishedTables } from '../../src/store/publication.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { readSlot } from '../support/pgoutput.ts'

const NAME = 'crm_sync_mirror'
let dataDir: string
let server: EmbeddedPostgres
const pools: pg.Pool[] = []
let db: Db

function connect(url = server.url): Db {
  const pool = createPool(url, { max: 2 })
  // A connection still open when the server stops reports 57P01; that is expected here.
  pool.on('error', () => {})
  pools.push(pool)
  return createDb(pool)
}

const fakeLogger = () =>
  ({ info: vi.fn(), warn: vi.fn() }) as unknown as Logger & {
    info: ReturnType<typeof vi.fn>
    warn: ReturnType<typeof vi.fn>
  }

async function published(name = NAME): Promise<string[]> {
  const { rows } = await sql<{ table: string }>`
    select schemaname || '.' || tablename as table from pg_publication_tables
    where pubname = ${name} order by 1`.execute(db)
  return rows.map((row) => row.table)
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'crm-sync-publication-'))
  await chmod(dataDir, 0o755) // the embedded server may run as the postgres user
  server = await startEmbeddedPostgres({ dataDir, settings: { wal_level: 'logical' } })
  db = connect()
  const logger = fakeLogger()
  await migrateToLatest(db, { logger, publication: NAME })
  expect(logger.warn).not.toHaveBeenCalled()
}, 60_000)

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()))
  await server?.stop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

describe('the publication', () => {
  it('holds every table of crm and reservations, nothing of sync, and a second start writes nothing', async () => {
    const { rows } = await sql<{ table: string }>`
      select schemaname || '.' || tablename as table from pg_tables
      where schemaname in ('crm', 'reservations') order by 1`.execute(db)
    expect(await published()).toEqual(rows.map((row) => row.table))
    expect(await published()).toEqual([...publishedTables])
    expect(publishedTables).toContain('crm.tags')
    expect(publishedTables).toContain('crm.filter_group_members')
    const logger = fakeLogger()
    expect(await maintainPublication(db, NAME, logger)).toMatchObject({
      state: 'current',
      walLevel: 'logical',
    })
    expect(logger.info).not.toHaveBeenCalled()
    expect((await inspectPublication(db, NAME)).detail).toBe(
      `publication ${NAME} of ${publishedTables.length} tables`,
    )
  })

  it('gets its tables back when they differ, once, however many replicas start together', async () => {
    await sql`alter publication crm_sync_mirror drop table crm.tags, reservations.contact_tags`.execute(db)
    await sql`alter publication crm_sync_mirror add table sync.runs`.execute(db)
    expect(await inspectPublication(db, NAME)).toMatchObject({ state: 'pending' })
    const replicas = [connect(), connect(), connect()]
    const updated = await Promise.all(replicas.map((replica) => maintainPublication(replica, NAME)))
    expect(updated.map((status) => status.state).sort()).toEqual(['current', 'current', 'updated'])
    expect(await published()).toEqual([...publishedTables])

    await sql`drop publication crm_sync_mirror`.execute(db)
    const created = await Promise.all(replicas.map((replica) => maintainPublication(replica, NAME)))
    expect(created.map((status) => status.state).sort()).toEqual(['created', 'current', 'current'])
    expect(await published()).toEqual([...publishedTables])
  })

  it('is left alone, with one warning and no failure, by a role that cannot keep it', async () => {
    await sql`create role reporter login password 'reporter-password'`.execute(db)
    const url = new URL(server.url)
    url.username = 'reporter'
    url.password = 'reporter-password'
    const reporter = connect(url.toString())
    // Current: nothing to do, whoever asks.
    expect(await maintainPublication(reporter, NAME)).toMatchObject({ state: 'current' })

    await sql`alter publication crm_sync_mirror drop table crm.tags`.execute(db)
    let logger = fakeLogger()
    expect(await maintainPublication(reporter, NAME, logger)).toMatchObject({ state: 'skipped' })
    expect(logger.warn).toHaveBeenCalledTimes(1)
    expect(logger.warn.mock.calls[0]?.[0]).toMatch(/belongs to another role than reporter/)

    await sql`drop publication crm_sync_mirror`.execute(db)
    logger = fakeLogger()
    const status = await maintainPublication(reporter, NAME, logger)
    expect(status.detail).toMatch(/role reporter may not create publications in database crm_sync/)
    expect(logger.warn).toHaveBeenCalledTimes(1)
    await sql`grant create on database crm_sync to reporter`.execute(db)
    expect((await maintainPublication(reporter, NAME)).detail).toMatch(
      /role reporter does not own the mirror tables crm\.activities, crm\.addresses, crm\.assistants and \d+ more/,
    )
    expect((await inspectPublication(reporter, NAME)).state).toBe('skipped')
    expect(await published()).toEqual([])

    // Off: nothing is looked at, nothing created.
    expect(await maintainPublication(db, null)).toMatchObject({ state: 'off' })
    await migrateToLatest(db, { publication: null })
    expect(await published()).toEqual([])
    expect((await maintainPublication(db, NAME)).state).toBe('created')
  })
})

describe('a logical replication consumer', () => {
  const T0 = '2024-03-01T10:00:00Z'
  const T1 = '2024-03-01T11:00:00Z'
  const fetched = () => ({ source: 'fetch' as const, fetchedAt: new Date() })
  const tag = (id: number, name: string) => ({ id, name })
  const person = (name: string, updatedAt: string, tags: unknown[]) => ({
    id: 7,
    name,
    updated_at: updatedAt,
    tags,
  })

  it('receives inserts, updates and tombstones; a rewrite arrives as an update, children untouched', async () => {
    await sql`select pg_create_logical_replication_slot('loader', 'pgoutput')`.execute(db)
    try {
      await upsertRecords(db, people, [person('Ada', T0, [tag(1, 'a'), tag(2, 'b')])], fetched())
      // A changed record: the parent updated, the tag at place 1 replaced.
      const changed = person('Ada L.', T1, [tag(1, 'a'), tag(3, 'c')])
      await upsertRecords(db, people, [changed], fetched())
      // A full resync reads the same record again.
      await upsertRecords(db, people, [changed], fetched())
      await tombstone(db, people, [7], new Date())
      // Engine state is not published.
      await sql`insert into sync.member_reads (resource, group_id, members) values ('crm.filter_groups', 1, 0)`.execute(
        db,
      )

      const changes = await readSlot(db, 'loader', NAME)
      const summary = changes.map(({ op, table, row }) =>
        table === 'crm.people'
          ? `${op} ${table} ${row.id} ${row.name} ${row._deleted_at === null ? 'live' : 'deleted'}`
          : `${op} ${table} ${row._parent_resource} ${row._parent_id} ${row._ordinal} ${row.name}`,
      )
      expect(summary).toEqual([
        'insert crm.people 7 Ada live',
        'insert crm.tags crm.people 7 0 a',
        'insert crm.tags crm.people 7 1 b',
        'update crm.people 7 Ada L. live',
        // The deleted row comes as its key: the primary key is the tables' replica identity.
        'delete crm.tags crm.people 7 1 null',
        'insert crm.tags crm.people 7 1 c',
        'update crm.people 7 Ada L. live',
        'update crm.people 7 Ada L. deleted',
      ])
    } finally {
      await sql`select pg_drop_replication_slot('loader')`.execute(db)
    }
  })
})
