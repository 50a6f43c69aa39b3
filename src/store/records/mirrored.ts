// What the mirror holds of records read from an index, and whether a record read brings something the
// mirror lacks: the test by which the newest-page polls and the catch-up walks stop reading (a page the
// mirror holds all of), and the activity feed and the walks of append-only logs skip what they read
// before.
import { sql } from 'kysely'
import { hasUpdatedAt, type Resource } from '../../resources/index.ts'
import type { Db } from '../database.ts'
import type { UpstreamRecord } from './types.ts'

export interface MirroredState {
  updatedAt: Date | null
  deleted: boolean
  /** When the request that wrote the row was sent (null: a webhook's payload wrote it). */
  fetchedAt: Date | null
}

/** What the mirror holds of each of `ids` that has a row: its `updated_at` and whether it is tombstoned. */
export async function mirroredStates(
  db: Db,
  resource: Resource,
  ids: readonly number[],
): Promise<Map<number, MirroredState>> {
  if (ids.length === 0) return new Map()
  const updatedAt = hasUpdatedAt(resource) ? sql`updated_at` : sql`null::timestamptz`
  const result = await sql<{
    id: string | number
    updated_at: Date | null
    _deleted_at: Date | null
    _fetched_at: Date | null
  }>`
    select id, ${updatedAt} as updated_at, _deleted_at, _fetched_at from ${sql.table(resource.name)}
    where id = any(${[...ids]}::bigint[])
  `.execute(db)
  return new Map(
    result.rows.map((row) => [
      Number(row.id),
      { updatedAt: row.updated_at, deleted: row._deleted_at !== null, fetchedAt: row._fetched_at },
    ]),
  )
}

/**
 * Whether the mirror lacks what `record` holds: no row, a tombstone, an older version, or the same
 * `updated_at` read before the end of that second (a change later in the same second looks the same).
 */
export function newerThanMirror(record: UpstreamRecord, state: MirroredState | undefined): boolean {
  const time = Date.parse(String(record.updated_at ?? ''))
  if (!state || state.deleted || state.updatedAt === null) return true
  if (time !== state.updatedAt.getTime()) return time > state.updatedAt.getTime()
  return state.fetchedAt === null || state.fetchedAt.getTime() < time + 1000
}
