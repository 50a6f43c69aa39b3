// Tombstones: a row marked deleted, or a placeholder for an id never mirrored.
import { sql } from 'kysely'
import type { Resource } from '../../resources/index.ts'
import type { Db } from '../database.ts'
import { table } from './arrays.ts'

/**
 * Marks rows deleted as of `at`. Ids never mirrored get a placeholder row, so that a stale payload
 * arriving later cannot create them. Returns the ids that were live (or unknown) before.
 * `fetched`: the upstream answered 404 to a request sent at `at`, which is then the row's `_fetched_at`.
 */
export async function tombstone(
  db: Db,
  resource: Resource,
  ids: number[],
  at: Date = new Date(),
  options: { fetched?: boolean } = {},
): Promise<number[]> {
  if (ids.length === 0) return []
  const fetchedAt = options.fetched ? at.toISOString() : null
  const result = await sql<{ id: number }>`
    insert into ${sql.raw(table(resource.name))} as t (id, _deleted_at, _synced_at, _fetched_at)
    select distinct unnest(${ids}::bigint[]), ${at.toISOString()}::timestamptz, now(), ${fetchedAt}::timestamptz
    on conflict (id) do update set _deleted_at = excluded._deleted_at, _synced_at = now(), _version = t._version + 1,
      _fetched_at = coalesce(excluded._fetched_at, t._fetched_at)
    where t._deleted_at is null
    returning t.id
  `.execute(db)
  return result.rows.map((row) => row.id)
}
