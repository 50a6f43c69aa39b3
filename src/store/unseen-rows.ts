// Rows a complete sweep did not see. Every live row the sweep fetched, and every row a webhook wrote
// meanwhile, has `_synced_at` at or after the sweep's start (records.ts rewrites a row for a fetched
// record of the same second). So the live rows written before the start are exactly those neither
// seen nor changed since: deleted upstream, or missed because offset pages shifted under the sweep.
import { sql } from 'kysely'
import type { RecordId, Resource } from '../resources/index.ts'
import type { Db } from './database.ts'

/**
 * Ids of live rows last written before `sweepStart`, in id order after `afterId`, at most `limit`.
 * Text ids (attachments) come in PostgreSQL's order of the column, which `afterId` follows as well.
 */
export async function listUnseenLiveIds(
  db: Db,
  resource: Resource,
  sweepStart: Date,
  afterId: RecordId,
  limit: number,
): Promise<RecordId[]> {
  const [schema, name] = resource.name.split('.') as [string, string]
  const result = await sql<{ id: RecordId }>`
    select id from ${sql.table(`${schema}.${name}`)}
    where _deleted_at is null and _synced_at < ${sweepStart} and id > ${afterId}
    order by id
    limit ${limit}
  `.execute(db)
  return result.rows.map((row) => row.id)
}
