// Indexes on tables that can be large (a mirror table, sync.inbox) are built `concurrently`, so that
// the build never locks writers out: the receiver goes on storing deliveries while it runs. PostgreSQL
// refuses such a build inside the transaction the migrations share, so a migration names them in an
// export instead, and they are built after the migrations commit, one at a time:
//
//   export const concurrentIndexes = [
//     { name: 'inbox_model_received', table: 'sync.inbox', definition: '(model, received_at)' },
//   ]
//
// A build that was interrupted (a process killed, a unique violation) leaves an invalid index behind;
// it is dropped and built again at the next start. Replicas take turns (one session advisory lock),
// and a build waits as long as it needs for older transactions: it blocks nobody while it waits.
import { type Kysely, sql } from 'kysely'
import type { Logger } from '../log.ts'
import { catalogNames } from './account-schemas.ts'

export interface ConcurrentIndex {
  /** Index name, created in the table's schema. */
  name: string
  /** Schema-qualified table. */
  table: string
  /** What follows `on <table>`: the columns, and optionally `using`, `include` or `where`. */
  definition: string
}

/** Session advisory lock key that serialises concurrent builds across replicas ("concurrent index"). */
const BUILD_LOCK = 0x0c1d_0001

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/
const QUALIFIED = /^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$/

/** The concurrent indexes that migration modules export, in migration order. */
export function concurrentIndexesOf(migrations: Array<{ module: unknown }>): ConcurrentIndex[] {
  return migrations.flatMap(({ module }) => {
    const declared = (module as { concurrentIndexes?: unknown }).concurrentIndexes
    if (declared === undefined) return []
    if (!Array.isArray(declared)) throw new Error('concurrentIndexes must be an array')
    return declared.map(checkIndex)
  })
}

function checkIndex(index: ConcurrentIndex): ConcurrentIndex {
  if (
    !IDENTIFIER.test(index.name) ||
    !QUALIFIED.test(index.table) ||
    !index.definition.trim().startsWith('(')
  ) {
    throw new Error(`invalid concurrent index ${JSON.stringify(index)}`)
  }
  return index
}

/** Builds every index that is missing or invalid; returns the names built. */
export async function buildConcurrentIndexes<DB>(
  db: Kysely<DB>,
  indexes: ConcurrentIndex[],
  logger?: Logger,
): Promise<string[]> {
  if (indexes.length === 0) return []
  return db.connection().execute(async (session) => {
    await sql`select pg_advisory_lock(${BUILD_LOCK})`.execute(session)
    try {
      // A build waits for older transactions to end; it holds no lock that writers need meanwhile.
      await sql`set lock_timeout = 0`.execute(session)
      const built: string[] = []
      for (const index of indexes) {
        if (await buildOne(session, index, logger)) built.push(index.name)
      }
      return built
    } finally {
      await sql`reset lock_timeout`.execute(session)
      await sql`select pg_advisory_unlock(${BUILD_LOCK})`.execute(session)
    }
  })
}

async function buildOne<DB>(session: Kysely<DB>, index: ConcurrentIndex, logger?: Logger): Promise<boolean> {
  // The index's schema as the session's account names it (./account-schemas.ts).
  const names = catalogNames(session)
  const schema = names.physical(index.table.split('.')[0] as string)
  const qualified = sql.id(schema, index.name)
  const { rows } = await sql<{ valid: boolean }>`
    select i.indisvalid as valid
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relname = ${index.name}`.execute(session)
  if (rows[0]?.valid) return false
  if (rows[0]) {
    logger?.warn({ index: index.name }, 'dropping an index whose concurrent build was interrupted')
    await sql`drop index concurrently if exists ${qualified}`.execute(session)
  }
  logger?.info({ index: index.name, table: index.table }, 'building index concurrently')
  const [tableSchema, table] = index.table.split('.') as [string, string]
  await sql`create index concurrently if not exists ${sql.id(index.name)} on ${sql.id(names.physical(tableSchema), table)} ${sql.raw(
    index.definition,
  )}`.execute(session)
  return true
}
