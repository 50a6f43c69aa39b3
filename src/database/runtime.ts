// Opens the database a command works on: DATABASE_URL when given, else the embedded PostgreSQL. One
// connection is tried at once, so that a database that cannot be reached, or that refuses the login,
// is named as such (DatabaseConnectionError) instead of failing whatever comes first (a migration).
import type pg from 'pg'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import { createDb, createPool, type Db, redactUrl } from '../store/database.ts'
import { startEmbeddedPostgres } from './embedded-postgres.ts'

export interface OpenDatabase {
  url: string
  pool: pg.Pool
  db: Db
  embedded: boolean
  close(): Promise<void>
}

/** The database cannot be used: not reached, or the login refused. The message names it, never the password. */
export class DatabaseConnectionError extends Error {
  override name = 'DatabaseConnectionError'
  readonly reason: 'unreachable' | 'authentication'
  constructor(message: string, reason: 'unreachable' | 'authentication', options?: ErrorOptions) {
    super(message, options)
    this.reason = reason
  }
}

/** `host:port/dbname` of a postgres:// URL: where it points, without user or password. */
export function databaseLocation(url: string): string {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost'
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || databaseUser(url)
    return `${host}:${parsed.port || '5432'}/${database}`
  } catch {
    return '(an unparsable URL)'
  }
}

/** The user a postgres:// URL logs in as. */
export function databaseUser(url: string): string {
  try {
    return decodeURIComponent(new URL(url).username) || 'postgres'
  } catch {
    return 'postgres'
  }
}

// SQLSTATE: invalid_password, invalid_authorization_specification (pg_hba.conf), invalid_catalog_name.
const AUTHENTICATION = new Set(['28P01', '28000'])
const NO_SUCH_DATABASE = '3D000'
const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is PostgreSQL running there?)',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved',
  ETIMEDOUT: 'no answer (timed out)',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'the connection was reset',
}

/** Why `url` cannot be used, in one line that names it (without the password). */
export function explainConnectionError(error: unknown, url: string): DatabaseConnectionError {
  const where = databaseLocation(url)
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : String(error)
  if (typeof code === 'string' && AUTHENTICATION.has(code)) {
    const what = code === '28P01' ? 'refused the password of' : 'refused the login of'
    return new DatabaseConnectionError(
      `authentication failed: the database at ${where} ${what} user ${databaseUser(url)} (${message})`,
      'authentication',
      { cause: error },
    )
  }
  const reason =
    (typeof code === 'string' && code !== NO_SUCH_DATABASE && NETWORK[code]) ||
    (/timeout/i.test(message) ? 'no answer within 10 s' : message || String(code ?? 'unknown error'))
  return new DatabaseConnectionError(`cannot connect to the database at ${where}: ${reason}`, 'unreachable', {
    cause: error,
  })
}

/** Takes one connection from the pool and gives it back; throws DatabaseConnectionError if it cannot. */
export async function probeDatabase(pool: pg.Pool, url: string): Promise<void> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw explainConnectionError(error, url)
  }
  client.release()
}

export async function openDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  const embedded = config.databaseUrl
    ? null
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        port: config.embeddedPostgresPort,
        log: (line) => logger.info({ component: 'embedded-postgres' }, line),
      })
  const url = config.databaseUrl ?? (embedded?.url as string)
  const pool = createPool(url)
  // An idle connection that breaks (database restarted) must not crash the process.
  pool.on('error', (error) => logger.warn({ err: error }, 'idle database connection failed'))
  const db = createDb(pool)
  try {
    await probeDatabase(pool, url)
  } catch (error) {
    await db.destroy().catch(() => {})
    await embedded?.stop()
    throw error
  }
  logger.info({ database: redactUrl(url), embedded: Boolean(embedded) }, 'database configured')
  let closing: Promise<void> | undefined
  return {
    url,
    pool,
    db,
    embedded: Boolean(embedded),
    close() {
      closing ??= (async () => {
        await db.destroy() // ends the pool
        await embedded?.stop()
      })()
      return closing
    },
  }
}
