// Connections to PostgreSQL: one pool per process, shared by Kysely and pg-boss.
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './schema.ts'

export type Db = Kysely<Database>

const INT8 = 20
const DATE = 1082

// bigint ids of the upstream are far below 2^53, so they read back as numbers; a date stays the
// 'YYYY-MM-DD' string it is (a JavaScript Date would shift it by the time zone); numeric stays a string.
function getTypeParser(oid: number, format?: 'text' | 'binary') {
  if (oid === INT8) return (value: string) => Number(value)
  if (oid === DATE) return (value: string) => value
  return pg.types.getTypeParser(oid, format ?? 'text')
}

export interface PoolOptions {
  max?: number
  applicationName?: string
}

export function createPool(connectionString: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'crm-sync',
    // Timestamps without an offset are read as UTC, whatever the server's default time zone.
    options: '-c TimeZone=UTC',
    types: { getTypeParser } as pg.CustomTypesConfig,
    connectionTimeoutMillis: 10_000,
    // A connection a failover or a proxy cut without a reset is found dead in minutes, not hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  })
  // A connection that breaks while checked out (the database stopped, a proxy cut it) emits 'error' on
  // its client, which pg-pool listens to only while the client is idle: unheard, it would end the
  // process. The query in flight rejects anyway, and pg-pool discards the broken client on release.
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
}

/** The URL with its password replaced, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparsable URL)'
  }
}
