// The logical replication publication of the mirror (MIRROR_PUBLICATION, docs/warehouse.md): every
// table of the data dictionary (main, child and member tables of crm and reservations; nothing of sync
// or pgboss), kept after the migrations so that a warehouse loader (PeerDB, Airbyte, Fivetran, Debezium)
// can read the mirror's changes through a replication slot of its own. Created when missing; its table
// list set when it differs (a table a migration adds joins it, one added by hand is taken out again). A
// publication that is current costs one catalog query. Writes are one transaction under an advisory
// lock, so replicas starting together take turns (the later ones find it current).
//
// A publication is a convenience for loaders: when the role cannot keep it (not a superuser, nor owner
// of the mirror tables with CREATE on the database, nor owner of the publication that exists), when a
// lock cannot be had in time, or when the database refuses otherwise, nothing is written, one warning
// is logged and the start goes on; the next start tries again.
import { type Kysely, sql } from 'kysely'
import type { Logger } from '../log.ts'
import { mirrorTables } from '../resources/dictionary/index.ts'
import { type AccountSchemas, qualifiedIn, schemasOf } from './account-schemas.ts'
import { ident } from './dictionary-sql.ts'

/** Transaction advisory lock key of the publication's writes ("publication"). */
const PUBLICATION_LOCK = 0x0c1d_0003
const LOCK_TIMEOUT_MS = 3_000
// SQLSTATE duplicate_object: a publication created by a session that did not take the lock.
const DUPLICATE_OBJECT = '42710'

/** The tables the publication holds: every mirror table, qualified, in name order. */
export const publishedTables: readonly string[] = mirrorTables.map((table) => table.name).sort()

/** The mirror tables of every account, as the catalog names them, in name order. */
const tablesOf = (accounts: readonly AccountSchemas[]) =>
  accounts.flatMap((schemas) => publishedTables.map((table) => qualifiedIn(schemas, table))).sort()

/**
 * `off`: MIRROR_PUBLICATION is off, nothing is looked at. `current`: the publication holds exactly the
 * mirror tables. `created`, `updated`: this call made it so. `pending` (inspectPublication only): the
 * next start creates or updates it. `skipped`: it cannot be kept (`detail` says why).
 */
export type PublicationState = 'off' | 'current' | 'created' | 'updated' | 'pending' | 'skipped'

export interface PublicationStatus {
  state: PublicationState
  name: string | null
  detail: string
  /** The server's wal_level (`logical` is what a loader needs); null when off. */
  walLevel: string | null
}

interface Catalog {
  role: string
  database: string
  superuser: boolean
  canCreate: boolean
  walLevel: string
  exists: boolean
  allTables: boolean
  owned: boolean
  /** The tables the publication holds now, qualified. */
  tables: string[]
  /** Mirror tables that do not exist, and those the role does not own. */
  missing: string[]
  notOwned: string[]
}

async function readCatalog<DB>(db: Kysely<DB>, name: string, tables: string[]): Promise<Catalog> {
  // (By name, not to_regclass: that needs USAGE on the schema, which a role that cannot is missing.)
  const { rows } = await sql<Catalog>`
    with mirror as (
      select n.nspname || '.' || c.relname as name, c.relowner as owner
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname || '.' || c.relname = any(${tables}::text[]) and c.relkind in ('r', 'p')
    )
    select current_user as role, current_database() as database,
      coalesce((select rolsuper from pg_roles where rolname = current_user), false) as superuser,
      has_database_privilege(current_database(), 'CREATE') as "canCreate",
      current_setting('wal_level') as "walLevel",
      p.oid is not null as exists, coalesce(p.puballtables, false) as "allTables",
      coalesce(pg_has_role(p.pubowner, 'USAGE'), false) as owned,
      array(select t.schemaname || '.' || t.tablename from pg_publication_tables t
        where t.pubname = ${name} order by 1) as tables,
      array(select w.name from unnest(${tables}::text[]) w(name)
        where w.name <> all(array(select m.name from mirror m))) as missing,
      array(select m.name from mirror m where not pg_has_role(m.owner, 'USAGE') order by 1) as "notOwned"
    from (select) one left join pg_publication p on p.pubname = ${name}`.execute(db)
  return rows[0] as Catalog
}

const isCurrent = (catalog: Catalog, tables: string[]) =>
  catalog.exists && !catalog.allTables && catalog.tables.join(',') === tables.join(',')

const some = (names: string[]) =>
  names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ')

/** Why the role cannot create or update the publication; null when it can. */
function refusal(catalog: Catalog, name: string): string | null {
  const { role } = catalog
  if (catalog.allTables)
    return `publication ${name} exists FOR ALL TABLES, which crm-sync does not change (drop it, or choose another MIRROR_PUBLICATION)`
  if (catalog.missing.length > 0) return `the mirror tables ${some(catalog.missing)} do not exist`
  if (catalog.superuser) return null
  if (catalog.exists && !catalog.owned)
    return `publication ${name} exists and belongs to another role than ${role}`
  if (!catalog.exists && !catalog.canCreate)
    return `role ${role} may not create publications in database ${catalog.database} (grant create on database ${catalog.database} to ${role})`
  if (catalog.notOwned.length > 0)
    return `role ${role} does not own the mirror tables ${some(catalog.notOwned)}, which a publication of them needs`
  return null
}

const status = (
  state: PublicationState,
  name: string | null,
  detail: string,
  walLevel: string | null,
): PublicationStatus => ({ state, name, detail, walLevel })

const walNote = (walLevel: string) =>
  walLevel === 'logical' ? '' : `; wal_level is ${walLevel}: loaders need wal_level = logical`

/** What the publication is, and what a start would do to it; writes nothing (`crm-sync check`). */
export async function inspectPublication<DB>(
  db: Kysely<DB>,
  name: string | null,
  accounts: readonly AccountSchemas[] = [schemasOf(db)],
): Promise<PublicationStatus> {
  if (name === null) return status('off', null, 'MIRROR_PUBLICATION is off', null)
  const tables = tablesOf(accounts)
  const catalog = await readCatalog(db, name, tables)
  const wal = walNote(catalog.walLevel)
  if (isCurrent(catalog, tables))
    return status('current', name, `publication ${name} of ${tables.length} tables${wal}`, catalog.walLevel)
  const why = refusal(catalog, name)
  if (why) return status('skipped', name, `publication ${name} not kept: ${why}`, catalog.walLevel)
  const todo = catalog.exists ? 'its tables are set' : 'it is created'
  return status(
    'pending',
    name,
    `publication ${name}: ${todo} by the next start or migrate${wal}`,
    catalog.walLevel,
  )
}

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code

/**
 * Creates the publication `name` of every mirror table of `accounts` (by default `db`'s), or sets its
 * tables, unless it is current; null leaves everything as it is. Never throws for what the database
 * refuses: it warns (once) and says so.
 */
export async function maintainPublication<DB>(
  db: Kysely<DB>,
  name: string | null,
  logger?: Logger,
  accounts: readonly AccountSchemas[] = [schemasOf(db)],
): Promise<PublicationStatus> {
  if (name === null) return status('off', null, 'MIRROR_PUBLICATION is off', null)
  for (let attempt = 1; ; attempt++) {
    try {
      return await writePublication(db, name, tablesOf(accounts), logger)
    } catch (error) {
      const code = codeOf(error)
      if (typeof code !== 'string') throw error
      if (code === DUPLICATE_OBJECT && attempt === 1) continue
      const detail = `publication ${name} not kept, the next start tries again: ${(error as Error).message}`
      logger?.warn({ err: error }, detail)
      return status('skipped', name, detail, null)
    }
  }
}

async function writePublication<DB>(
  db: Kysely<DB>,
  name: string,
  tables: string[],
  logger?: Logger,
): Promise<PublicationStatus> {
  const outside = await readCatalog(db, name, tables)
  const wal = walNote(outside.walLevel)
  const current = () =>
    status('current', name, `publication ${name} of ${tables.length} tables${wal}`, outside.walLevel)
  if (isCurrent(outside, tables)) return current()
  const why = refusal(outside, name)
  if (why) {
    const detail = `publication ${name} not kept: ${why}; set MIRROR_PUBLICATION=off to stop trying`
    logger?.warn(detail)
    return status('skipped', name, detail, outside.walLevel)
  }
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${PUBLICATION_LOCK})`.execute(trx)
    await sql`select set_config('lock_timeout', ${String(LOCK_TIMEOUT_MS)}, true)`.execute(trx)
    // Another replica may have done it meanwhile.
    const catalog = await readCatalog(trx, name, tables)
    if (isCurrent(catalog, tables)) return current()
    // The names are the catalog's already: the statement is run as it is, on any account's connection.
    const list = tables.map((table) => table.split('.').map(ident).join('.')).join(', ')
    const statement = catalog.exists
      ? `alter publication ${ident(name)} set table ${list}`
      : `create publication ${ident(name)} for table ${list}`
    await sql.raw(statement).execute(trx)
    const state = catalog.exists ? 'updated' : 'created'
    const detail = `publication ${name} ${state}: ${tables.length} tables${wal}`
    logger?.info({ publication: name, tables: tables.length }, detail)
    return status(state, name, detail, catalog.walLevel)
  })
}
