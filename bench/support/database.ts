// The PostgreSQL server the benchmarks run against, and a fresh migrated database per scenario.
// BENCH_DATABASE_URL or DATABASE_URL when given, else the machine's PostgreSQL on 127.0.0.1:5432 if
// it answers, else an embedded PostgreSQL in a temporary folder for the length of the run.
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { PgBoss } from 'pg-boss'
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.ts'
import { createDb, createPool, type Db } from '../../src/store/database.ts'
import { migrateToLatest } from '../../src/store/migrate.ts'
import { JOB_SCHEMA } from '../../src/sync/job-queue.ts'

const LOCAL_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres'

export interface DatabaseServer {
  /** URL of the server's maintenance database (`postgres`). */
  url: string
  kind: 'given' | 'local' | 'embedded'
  version: string
  stop(): Promise<void>
}

export interface BenchDatabase {
  name: string
  url: string
  pool: pg.Pool
  db: Db
  /** Drops the database (closing the pool first). */
  drop(): Promise<void>
}

/** The same server URL with another database. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

export async function openServer(given: string | undefined): Promise<DatabaseServer> {
  const version = (url: string) =>
    withClient(url, async (client) => {
      const result = await client.query<{ server_version: string }>('show server_version')
      return result.rows[0]?.server_version ?? 'unknown'
    })
  if (given) return { url: given, kind: 'given', version: await version(given), stop: async () => {} }
  if (await reachable(LOCAL_SERVER)) {
    return { url: LOCAL_SERVER, kind: 'local', version: await version(LOCAL_SERVER), stop: async () => {} }
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'crm-sync-bench-'))
  await chmod(dataDir, 0o755) // the embedded server may run as the postgres user
  const embedded = await startEmbeddedPostgres({ dataDir })
  const url = withDatabase(embedded.url, 'postgres')
  return {
    url,
    kind: 'embedded',
    version: await version(url),
    async stop() {
      await embedded.stop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * A new database named after the scenario, migrated to the latest schema, with pg-boss's schema
 * installed (as the first start of the engine would), so that engines started on it start fast.
 */
export async function createBenchDatabase(server: DatabaseServer, scenario: string): Promise<BenchDatabase> {
  const name = `crm_sync_bench_${scenario.replaceAll('-', '_')}_${randomBytes(4).toString('hex')}`
  await withClient(server.url, (client) => client.query(`create database ${name}`))
  const url = withDatabase(server.url, name)
  const pool = createPool(url, { max: 4, applicationName: 'crm-sync:bench' })
  // A connection still open when the database is dropped reports 57P01; that is expected here.
  pool.on('error', () => {})
  const db = createDb(pool)
  await migrateToLatest(db)
  const boss = new PgBoss({ connectionString: url, schema: JOB_SCHEMA, max: 1 })
  boss.on('error', () => {})
  await boss.start()
  await boss.stop({ graceful: false })
  return {
    name,
    url,
    pool,
    db,
    async drop() {
      await db.destroy()
      await withClient(server.url, (client) => client.query(`drop database if exists ${name} with (force)`))
    },
  }
}
