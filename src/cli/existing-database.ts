// The database of a command that reads (or only changes rows): it creates nothing. Without DATABASE_URL
// it needs an embedded cluster under DATA_DIR already, and in every case the schema crm-sync migrate or
// start made; it never migrates. When either is missing it says so, and the command exits 1.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import type { Config } from '../config/index.ts'
import type { OpenDatabase } from '../database-runtime.ts'
import type { Logger } from '../log.ts'
import { appliedMigrationCount, migrationFileCount } from '../store/migrate.ts'
import { openCommandDatabase } from './database.ts'

/** Why the database cannot be read as it is; the command prints it and exits 1. */
export class NoSchemaError extends Error {
  override name = 'NoSchemaError'
}

/**
 * Opens the database as the other commands do, but neither creates an embedded cluster nor migrates.
 * Throws NoSchemaError when there is no cluster or no crm-sync schema; warns on stderr when migrations
 * are pending (an older schema: what it holds is shown as it is).
 */
export async function openExistingDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'postgres', 'PG_VERSION'))) {
    throw new NoSchemaError(
      `no database: DATABASE_URL is not set and ${config.dataDir} holds no embedded PostgreSQL (crm-sync migrate or start creates it)`,
    )
  }
  const database = await openCommandDatabase(config, logger)
  try {
    const { rows } = await sql<{ present: boolean }>`
      select to_regclass('sync.runs') is not null as present`.execute(database.db)
    if (!rows[0]?.present) {
      throw new NoSchemaError(
        'the database has no crm-sync schema yet (crm-sync migrate or start creates it)',
      )
    }
    const [applied, files] = await Promise.all([appliedMigrationCount(database.db), migrationFileCount()])
    if (applied < files) {
      console.error(
        `note: ${files - applied} migration(s) not applied yet (crm-sync migrate or start applies them)`,
      )
    }
    return database
  } catch (error) {
    await database.close()
    throw error
  }
}
