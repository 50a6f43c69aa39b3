// What the delivery and refresh workers read of mirror rows before deciding: the second a row holds,
// and when the upstream was last asked for it.
import { sql } from 'kysely'
import { hasUpdatedAt, type Resource } from '../resources/index.ts'
import type { Db } from './database.ts'

const table = (qualified: string) =>
  sql.raw(
    qualified
      .split('.')
      .map((part) => `"${part}"`)
      .join('.'),
  )

/**
 * The `updated_at` of each existing row among `ids`, locked until the transaction ends, so that two
 * workers applying payloads of one record see each other's write.
 */
export async function lockUpdatedAts(
  db: Db,
  resource: Resource,
  ids: number[],
): Promise<Map<number, Date | null>> {
  if (ids.length === 0 || !hasUpdatedAt(resource)) return new Map()
  const result = await sql<{ id: string | number; updated_at: Date | null }>`
    select id, updated_at from ${table(resource.name)} where id = any(${ids}::bigint[]) order by id for update
  `.execute(db)
  return new Map(result.rows.map((row) => [Number(row.id), row.updated_at]))
}

/** When the request was sent whose answer last wrote the row (null: never fetched, or no row). */
export async function readFetchedAt(db: Db, resource: Resource, id: number): Promise<Date | null> {
  const result = await sql<{ _fetched_at: Date | null }>`
    select _fetched_at from ${table(resource.name)} where id = ${id}
  `.execute(db)
  return result.rows[0]?._fetched_at ?? null
}
