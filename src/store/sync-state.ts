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

/** Records that the largest page seen of the resource is at least `size`. */
export async function raiseLargestPage(db: Db, resource: string, size: number): Promise<void> {
  if (size <= 0) return
  await sql`
    insert into sync.resource_state as t (resource, largest_page) values (${resource}, ${size})
    on conflict (resource) do update
      set largest_page = greatest(coalesce(t.largest_page, 0), excluded.largest_page), updated_at = now()
      where t.largest_page is null or t.largest_page < excluded.largest_page
  `.execute(db)
}

/** Rows of a main table that are not tombstoned. */
export async function countLiveRows(db: Db, resource: Resource): Promise<number> {
  const [schema, name] = resource.name.split('.') as [string, string]
  const result = await sql<{ count: number }>`
    select count(*)::int as count from ${sql.table(`${schema}.${name}`)} where _deleted_at is null
  `.execute(db)
  return result.rows[0]?.count ?? 0
}

/**
 * Whether one of `resources` is in its first sync: it has never finished a sweep (no watermark, and no
 * time of a successful sweep: resources without `updated_at`, such as users, never get a watermark),
 * and a sweep of it is queued or running. A resource whose sweeps all failed is in no first sync.
 */
export async function inFirstSync(db: Db, resources: readonly string[]): Promise<boolean> {
  const result = await sql<{ found: boolean }>`
    select exists (
      select 1 from sync.run_resources s
      where s.resource = any(${[...resources]}::text[]) and s.status in ('queued', 'running')
        and not exists (
          select 1 from sync.resource_state r
          where r.resource = s.resource
            and (r.watermark is not null or r.last_incremental_sync_at is not null or r.last_full_sync_at is not null)
        )
    ) as found
  `.execute(db)
  return result.rows[0]?.found ?? false
}
