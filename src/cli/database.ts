// The database a one-shot command (status, resync, hooks, migrate) works on. Without DATABASE_URL, a
// running `crm-sync start` holds the embedded PostgreSQL under DATA_DIR and a second process may not
// start it; the command then joins that server, on the port its pid file names and with the password
// kept beside it, instead of refusing. Otherwise it opens the database as the service would.
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import pg from 'pg'
import type { Config } from '../config/index.ts'
import { type OpenDatabase, openDatabase, probeDatabase } from '../database/runtime.ts'
import type { Logger } from '../log.ts'
import { forAccount } from '../store/account-schemas.ts'
import { createDb, createPool } from '../store/database.ts'

// The database the embedded server creates for crm-sync (src/database/embedded-postgres.ts).
const EMBEDDED_DATABASE = 'crm_sync'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The URL of an embedded PostgreSQL that another process serves from `dataDir`, if one answers. */
async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid')
  const passwordFile = join(dataDir, 'postgres.password')
  if (!existsSync(pidFile) || !existsSync(passwordFile)) return null
  // postmaster.pid: pid, data directory, start time, port, ... one per line.
  const [pidLine, , , portLine] = (await readFile(pidFile, 'utf8')).split('\n')
  const pid = Number(pidLine)
  const port = Number(portLine)
  if (!Number.isInteger(pid) || !Number.isInteger(port) || !alive(pid)) return null
  const password = (await readFile(passwordFile, 'utf8')).trim()
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${EMBEDDED_DATABASE}`
  const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  try {
    await probe.connect()
    return url
  } catch {
    return null // starting or stopping: openDatabase says what is wrong
  } finally {
    await probe.end().catch(() => {})
  }
}

/** The database of the command's account (`--account`): every statement in that account's schemas. */
export async function openCommandDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  const database = await openAnyDatabase(config, logger)
  return { ...database, db: forAccount(database.db, config.account.schemas) }
}

async function openAnyDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  const url = config.databaseUrl ? null : await runningEmbeddedUrl(config.dataDir)
  if (!url) return openDatabase(config, logger)
  logger.info({ dataDir: config.dataDir }, 'joining the embedded PostgreSQL of a running crm-sync')
  const pool = createPool(url)
  pool.on('error', (error) => logger.warn({ err: error }, 'idle database connection failed'))
  const db = createDb(pool)
  try {
    await probeDatabase(pool, url)
  } catch (error) {
    await db.destroy().catch(() => {})
    throw error
  }
  let closing: Promise<void> | undefined
  return {
    url,
    pool,
    db,
    embedded: true,
    close() {
      closing ??= db.destroy() // the server belongs to the other process: only the pool ends
      return closing
    },
  }
}
