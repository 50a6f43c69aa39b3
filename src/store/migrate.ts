// Schema migrations with Kysely's Migrator. Kysely holds a PostgreSQL advisory lock while it
// migrates and tolerates a concurrent creation of its own tables, so replicas may start together.
//
// Every migration waits at most MIGRATION_LOCK_TIMEOUT_MS for a lock on a table it changes: a DDL
// statement waiting behind a long report query would queue every later query of that table behind
// itself (the receiver's inserts included), so it gives up instead and the start fails, to be
// retried. Frozen migrations keep their SQL; the setting is made here, before each one. A migration
// that indexes a table that can be large (a mirror table, sync.inbox) exports the index as one of its
// `concurrentIndexes`, built without blocking writers once the migrations commit (see
// concurrent-indexes.ts).
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type DatabaseIntrospector, type Kysely, sql } from 'kysely'
import { FileMigrationProvider, type Migration, type MigrationProvider, Migrator } from 'kysely/migration'
import type { Logger } from '../log.ts'
import { schemasOf } from './account-schemas.ts'
import { buildConcurrentIndexes, concurrentIndexesOf } from './concurrent-indexes.ts'
import { applyDictionary } from './dictionary.ts'
import { maintainHistory } from './history.ts'
import { maintainPublication } from './publication.ts'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations', import.meta.url))

/**
 * 3 s: shorter than the receiver's 5 s budget for storing a delivery, so deliveries queued behind a
 * migration that waits for its lock are still stored in time once it gives up.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 3_000

// SQLSTATE lock_not_available: what lock_timeout raises.
const LOCK_NOT_AVAILABLE = '55P03'

export class MigrationError extends Error {
  override name = 'MigrationError'
}

/** The migrations of `inner`, each setting lock_timeout first (a migration may have set its own). */
function withLockTimeout(inner: MigrationProvider): MigrationProvider {
  const limited =
    (step: Migration['up']): Migration['up'] =>
    async (db) => {
      await sql`select set_config('lock_timeout', ${String(MIGRATION_LOCK_TIMEOUT_MS)}, true)`.execute(db)
      await step(db)
    }
  return {
    async getMigrations() {
      const migrations = await inner.getMigrations()
      return Object.fromEntries(
        Object.entries(migrations).map(([name, migration]) => [
          name,
          // the module's other exports (concurrentIndexes) stay with it
          {
            ...migration,
            up: limited(migration.up),
            ...(migration.down ? { down: limited(migration.down) } : {}),
          },
        ]),
      )
    },
  }
}

/**
 * `db` for Kysely's Migrator, whose checks that its own schema and tables exist read the columns of
 * every table of the database (`introspection.getTables`): with several accounts that is every
 * account's thousands of columns, three times per account at each start (1.6 s an account at 20
 * accounts). These read the one schema's names only.
 */
function withNarrowIntrospection(db: Kysely<any>, schema: string): Kysely<any> {
  const introspection: DatabaseIntrospector = {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`
        select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}
      `.execute(db)
      return rows
    },
    async getTables() {
      const { rows } = await sql<{ name: string; schema: string }>`
        select c.relname as name, n.nspname as schema
        from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${schema} and c.relkind in ('r', 'p')
      `.execute(db)
      return rows.map((row) => ({ ...row, isView: false, isForeign: false, columns: [] }))
    },
  }
  return new Proxy(db, {
    get(target, property) {
      if (property === 'introspection') return introspection
      const value = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

function createMigrator(db: Kysely<any>, migrationFolder = MIGRATIONS_DIR): Migrator {
  return new Migrator({
    db: withNarrowIntrospection(db, schemasOf(db).sync),
    provider: withLockTimeout(new FileMigrationProvider({ fs, path, migrationFolder })),
    // Each account's migrations are recorded in its own sync schema.
    migrationTableSchema: schemasOf(db).sync,
  })
}

export interface MigrateOptions {
  /** Another folder of migrations (tests): history, the comments and the live views are then left alone. */
  folder?: string
  logger?: Logger
  /**
   * The logical replication publication of the mirror tables to keep (MIRROR_PUBLICATION; see
   * ./publication.ts); null (off) or absent: no publication is created or changed.
   */
  publication?: string | null
}

/**
 * Applies every pending migration, in one transaction, then builds the concurrent indexes that are
 * missing or invalid, then keeps the history of the main tables (./history.ts), then brings the
 * comments and live views in line with the data dictionary (./dictionary.ts) and, when asked, the
 * publication (./publication.ts); returns the names of the migrations applied. Throws on any error but
 * those of the views and the publication (warnings).
 */
export async function migrateToLatest(db: Kysely<any>, options: MigrateOptions = {}): Promise<string[]> {
  const migrator = createMigrator(db, options.folder)
  const { error, results = [] } = await migrator.migrateToLatest()
  const failed = results.find((result) => result.status === 'Error')
  if (error || failed) {
    const locked = (error as { code?: unknown } | undefined)?.code === LOCK_NOT_AVAILABLE
    const cause =
      (error instanceof Error ? error.message : String(error ?? 'unknown error')) +
      (locked
        ? ` (another session held a lock on a table it changes for over ${MIGRATION_LOCK_TIMEOUT_MS / 1000} s; start again once that session is done)`
        : '')
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${cause}`.replace('  ', ' '), {
      cause: error,
    })
  }
  const applied = (await migrator.getMigrations()).filter((migration) => migration.executedAt)
  await buildConcurrentIndexes(
    db,
    concurrentIndexesOf(applied.map((migration) => ({ module: migration.migration }))),
    options.logger,
  )
  if (options.folder === undefined) {
    try {
      await maintainHistory(db, options.logger)
    } catch (historyError) {
      throw new MigrationError((historyError as Error).message, { cause: historyError })
    }
    await applyDictionary(db, options.logger)
  }
  if (options.folder === undefined && options.publication)
    await maintainPublication(db, options.publication, options.logger)
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}

/**
 * Names of migrations in `migrations/` that the database has not applied (the tests' check that a
 * database is current).
 * @internal
 */
export async function pendingMigrations(db: Kysely<any>): Promise<string[]> {
  const migrations = await createMigrator(db).getMigrations()
  return migrations.filter((migration) => !migration.executedAt).map((migration) => migration.name)
}

/** Cheap check for /readyz: how many migrations the database records as applied. */
export async function appliedMigrationCount(db: Kysely<any>): Promise<number> {
  const result = await sql<{ count: number }>`
    select count(*)::int as count from ${sql.table('sync.kysely_migration')}
  `.execute(db)
  return result.rows[0]?.count ?? 0
}

export async function migrationFileCount(): Promise<number> {
  const files = await fs.readdir(MIGRATIONS_DIR)
  return files.filter((file) => /\.(ts|js)$/.test(file) && !file.endsWith('.d.ts')).length
}
