// The live records that depend on tombstoned parents (resource table: `dependants`), e.g. the tasks of
// a deleted person: the upstream deletes them with their parent and says nothing.
import { sql } from 'kysely'
import type { Resource } from '../resources/index.ts'
import type { Db } from './database.ts'

export interface DependantIds {
  resource: string
  ids: number[]
}

/** The live dependants of these parents, per dependant resource (resources without any left out). */
export async function liveDependants(db: Db, parent: Resource, parentIds: number[]): Promise<DependantIds[]> {
  if (parentIds.length === 0) return []
  const found: DependantIds[] = []
  for (const dependant of parent.dependants) {
    const conditions = Object.entries(dependant.where ?? {}).map(
      ([column, value]) => sql`and ${sql.ref(column)} = ${value}`,
    )
    const result = await sql<{ id: number }>`
      select id from ${sql.table(dependant.resource)}
      where ${sql.ref(dependant.column)} = any(${parentIds}::bigint[]) ${conditions.length ? sql.join(conditions, sql` `) : sql``}
        and _deleted_at is null
      order by id
    `.execute(db)
    if (result.rows.length)
      found.push({ resource: dependant.resource, ids: result.rows.map((row) => row.id) })
  }
  return found
}
