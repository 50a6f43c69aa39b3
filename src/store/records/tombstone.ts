// Tombstones: a row marked deleted, or a placeholder for an id never mirrored.
import { sql } from 'kysely'
import { idType, type RecordId, type Resource } from '../../resources/index.ts'
import type { Db } from '../database.ts'
import { table } from './arrays.ts'

/**
 * Marks rows deleted as of `at`. Ids never mirrored get a placeholder row, so that a stale payload
 * arriving later cannot create them. Returns the ids that were live (or unknown) before.
 * `fetched`: the upstream answered 404 to a request sent at `at`, which is then the row's `_fetched_at`.
 * Rows of an append-only resource (activities) are never tombstoned: nothing is marked, none returned.
 * Ids are numbers, or strings where the resource's ids are text (attachments).
 */
export async function tombstone<I extends RecordId>(
  db: Db,
  resource: Resource,
  ids: readonly I[],
  at: Date = new Date(),
  options: { fetched?: boolean } = {},
): Promise<I[]> {
  if (ids.length === 0 || resource.appendOnly) return []
  const fetchedAt = options.fetched ? at.toISOString() : null
  const result = await sql<{ id: I }>`
    insert into ${sql.raw(table(resource.name))} as t (id, _deleted_at, _synced_at, _fetched_at)
    select distinct unnest(${[...ids]}::${sql.raw(idType(resource))}[]), ${at.toISOString()}::timestamptz, now(), ${fetchedAt}::timestamptz
    on conflict (id) do update set _deleted_at = excluded._deleted_at, _synced_at = now(), _version = t._version + 1,
      _fetched_at = coalesce(excluded._fetched_at, t._fetched_at)
    where t._deleted_at is null
    returning t.id
  `.execute(db)
  return result.rows.map((row) => row.id)
}
