// The database of a command that reads (or only changes rows): it creates nothing. Without DATABASE_URL
// it needs an embedded cluster under DATA_DIR already; it never migrates. `status`, `runs` and `cancel`
// also need the schema that crm-sync migrate or start made; `check` and `hooks list` make do without.
// When what they need is missing they say so in one line, and the command exits 1.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import type { Config } from '../config/index.ts'
import type { OpenDatabase } from '../database/runtime.ts'
import type { Logger } from '../log.ts'
import { appliedMigrationCount, migrationFileCount } from '../store/migrate.ts'
import { type CommandContext, EXIT } from './command.ts'
import { openCommandDatabase } from './database.ts'

/** Why the database cannot be read as it is; the command prints it and exits 1. */
export class NoSchemaError extends Error {
  override name = 'NoSchemaError'
}

export interface ExistingDatabase extends OpenDatabase {
  /** Whether the crm-sync schema is there and every migration of this version is applied. */
  migrated: boolean
}

/** Null when there is a database to open; else why not (no DATABASE_URL and no cluster under DATA_DIR). */
export function missingDatabase(config: Config): string | null {
  if (config.databaseUrl || existsSync(join(config.dataDir, 'postgres', 'PG_VERSION'))) return null
  return (
    `no database: DATABASE_URL is not set and there is no embedded PostgreSQL in ${config.dataDir} ` +
    '(crm-sync start creates it there); run this where crm-sync runs, or set DATA_DIR to its data ' +
    'folder or DATABASE_URL to its database'
  )
}

/**
 * Opens the database as the other commands do, but neither creates an embedded cluster nor migrates.
 * Throws NoSchemaError when there is no cluster, or (unless `schema` is `optional`) no crm-sync schema;
 * says on stderr when migrations are pending (an older schema: what it holds is shown as it is).
 */
export async function openExistingDatabase(
  config: Config,
  logger: Logger,
  options: { schema?: 'required' | 'optional' } = {},
): Promise<ExistingDatabase> {
  const missing = missingDatabase(config)
  if (missing) throw new NoSchemaError(missing)
  const database = await openCommandDatabase(config, logger)
  try {
    const { rows } = await sql<{ present: boolean }>`
      select to_regclass(${'sync.kysely_migration'}) is not null as present`.execute(database.db)
    if (!rows[0]?.present) {
      if (options.schema === 'optional') return { ...database, migrated: false }
      throw new NoSchemaError(
        'the database has no crm-sync schema yet (crm-sync migrate or start creates it)',
      )
    }
    const [applied, files] = await Promise.all([appliedMigrationCount(database.db), migrationFileCount()])
    if (applied < files && options.schema !== 'optional') {
      console.error(
        `note: the schema is older than this crm-sync: ${files - applied} migration(s) not applied yet ` +
          '(crm-sync migrate or start applies them; nothing is migrated here)',
      )
    }
    return { ...database, migrated: applied >= files }
  } catch (error) {
    await database.close()
    throw error
  }
}

/** Runs the command's work on the existing database; no database or schema: said, and exit 1. */
export async function withExistingDatabase(
  { config, logger }: Pick<CommandContext, 'config' | 'logger'>,
  name: string,
  work: (database: ExistingDatabase) => Promise<number>,
  options: { schema?: 'required' | 'optional' } = {},
): Promise<number> {
  let database: ExistingDatabase
  try {
    database = await openExistingDatabase(config, logger, options)
  } catch (error) {
    if (!(error instanceof NoSchemaError)) throw error
    console.error(`crm-sync ${name}: ${error.message}`)
    return EXIT.failed
  }
  try {
    return await work(database)
  } finally {
    await database.close()
  }
}
