// The live records that depend on tombstoned parents (resource table: `dependants`), e.g. the tasks of
// a deleted person, or the notes linked to it: the upstream deletes them with their parent and says
// nothing.
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
    // The columns are the dependant's (`d`), or those of its child table `through` (`c`).
    const holder = dependant.through ? 'c' : 'd'
    const conditions = Object.entries(dependant.where ?? {}).map(
      ([column, value]) => sql`and ${sql.ref(`${holder}.${column}`)} = ${value}`,
    )
    const naming = sql`${sql.ref(`${holder}.${dependant.column}`)} = any(${parentIds}::bigint[]) ${conditions.length ? sql.join(conditions, sql` `) : sql``}`
    const result = dependant.through
      ? await sql<{ id: number }>`
          select d.id from ${sql.table(dependant.resource)} d
          where d._deleted_at is null and exists (
            select 1 from ${sql.table(dependant.through)} c
            where c._parent_resource = ${dependant.resource} and c._parent_id = d.id and ${naming}
          )
          order by d.id
        `.execute(db)
      : await sql<{ id: number }>`
          select d.id from ${sql.table(dependant.resource)} d
          where ${naming} and d._deleted_at is null
          order by d.id
        `.execute(db)
    if (result.rows.length)
      found.push({ resource: dependant.resource, ids: result.rows.map((row) => row.id) })
  }
  return found
}
