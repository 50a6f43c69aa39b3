// Opens the database a command works on: DATABASE_URL when given, else the embedded PostgreSQL.
import type pg from 'pg'
import type { Config } from './config/index.ts'
import type { Logger } from './log.ts'
import { createDb, createPool, type Db, redactUrl } from './store/database.ts'
import { startEmbeddedPostgres } from './store/embedded-postgres.ts'

export interface OpenDatabase {
  url: string
  pool: pg.Pool
  db: Db
  embedded: boolean
  close(): Promise<void>
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
