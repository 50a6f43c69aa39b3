// Schema migrations with Kysely's Migrator. Kysely holds a PostgreSQL advisory lock while it
// migrates and tolerates a concurrent creation of its own tables, so replicas may start together.
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Kysely, sql } from 'kysely'
import { FileMigrationProvider, Migrator } from 'kysely/migration'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations', import.meta.url))
const MIGRATION_TABLE_SCHEMA = 'sync'

export class MigrationError extends Error {
  override name = 'MigrationError'
}

function createMigrator(db: Kysely<any>): Migrator {
  return new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS_DIR }),
    migrationTableSchema: MIGRATION_TABLE_SCHEMA,
  })
}

/** Applies every pending migration, in one transaction; returns the names applied. Throws on any error. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const { error, results = [] } = await createMigrator(db).migrateToLatest()
  const failed = results.find((result) => result.status === 'Error')
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error')
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${cause}`.replace('  ', ' '), {
      cause: error,
    })
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}

/** Names of migrations in `migrations/` that the database has not applied. */
export async function pendingMigrations(db: Kysely<any>): Promise<string[]> {
  const migrations = await createMigrator(db).getMigrations()
  return migrations.filter((migration) => !migration.executedAt).map((migration) => migration.name)
}

/** Cheap check for /readyz: how many migrations the database records as applied. */
export async function appliedMigrationCount(db: Kysely<any>): Promise<number> {
  const result = await sql<{ count: number }>`
    select count(*)::int as count from ${sql.table(`${MIGRATION_TABLE_SCHEMA}.kysely_migration`)}
  `.execute(db)
  return result.rows[0]?.count ?? 0
}

export async function migrationFileCount(): Promise<number> {
  const files = await fs.readdir(MIGRATIONS_DIR)
  return files.filter((file) => /\.(ts|js)$/.test(file) && !file.endsWith('.d.ts')).length
}
