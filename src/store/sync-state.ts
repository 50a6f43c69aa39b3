// Reads and writes of per-resource sync state (schema sync).
import { sql, type Updateable } from 'kysely'
import type { Resource } from '../resources/index.ts'
import type { Db } from './database.ts'
import type { ResourceStateTable } from './schema.ts'

export type ResourceStatePatch = Omit<Updateable<ResourceStateTable>, 'resource' | 'updated_at'>

export async function readResourceStates(db: Db) {
  return db.selectFrom('sync.resource_state').selectAll().orderBy('resource').execute()
}

export async function readResourceState(db: Db, resource: string) {
  return db.selectFrom('sync.resource_state').selectAll().where('resource', '=', resource).executeTakeFirst()
}

export async function writeResourceState(db: Db, resource: string, patch: ResourceStatePatch): Promise<void> {
  await db
    .insertInto('sync.resource_state')
    .values({ resource, ...patch })
    .onConflict((conflict) => conflict.column('resource').doUpdateSet({ ...patch, updated_at: sql`now()` }))
    .execute()
}

/** Rows of a main table that are not tombstoned. */
export async function countLiveRows(db: Db, resource: Resource): Promise<number> {
  const [schema, name] = resource.name.split('.') as [string, string]
  const result = await sql<{ count: number }>`
    select count(*)::int as count from ${sql.table(`${schema}.${name}`)} where _deleted_at is null
  `.execute(db)
  return result.rows[0]?.count ?? 0
}
