// Whether the mirror holds what the sandbox holds, for the resources that have webhooks: the same live
// ids, each with the upstream's updated_at and tags. What "converged" means for the benchmarks.
import { sql } from 'kysely'
import type { Sandbox } from '../../sandbox/index.ts'
import type { Db } from '../../src/store/database.ts'

export const HOOKED = [
  { collection: 'people', table: 'crm.people' },
  { collection: 'companies', table: 'crm.companies' },
  { collection: 'deals', table: 'crm.deals' },
  { collection: 'projects', table: 'crm.projects' },
] as const

/** The first difference found, or null when the mirror matches the sandbox. */
export async function firstDifference(db: Db, sandbox: Sandbox): Promise<string | null> {
  for (const { collection, table } of HOOKED) {
    const { rows } = await sql<{ id: number; updated_at: Date | null; tags: string | null }>`
      select m.id, m.updated_at,
        (select string_agg(t.name, ',' order by t.name) from crm.tags t
          where t._parent_resource = ${table} and t._parent_id = m.id) as tags
      from ${sql.table(table)} m where m._deleted_at is null
    `.execute(db)
    const live = sandbox.control.crm.liveIds(collection)
    if (rows.length !== live.length) return `${table}: ${rows.length} live rows, ${live.length} upstream`
    const mirror = new Map(rows.map((row) => [row.id, row]))
    for (const id of live) {
      const truth = sandbox.control.crm.get(collection, id)
      const row = mirror.get(id)
      if (!truth || !row) return `${table} ${id}: missing`
      if (row.updated_at?.getTime() !== Date.parse(String(truth.updated_at)))
        return `${table} ${id}: updated_at`
      const tags = ((truth.tags ?? []) as { name: string }[]).map((tag) => tag.name).sort()
      if ((row.tags ?? '') !== tags.join(',')) return `${table} ${id}: tags`
    }
  }
  return null
}

/** No unfinished run, and at least `atLeast` runs finished. */
export async function runsSettled(db: Db, atLeast = 1): Promise<boolean> {
  const { rows } = await sql<{ finished: number; unfinished: number }>`
    select count(*) filter (where status in ('succeeded', 'failed'))::int as finished,
      count(*) filter (where status in ('queued', 'running'))::int as unfinished
    from sync.runs
  `.execute(db)
  const row = rows[0]
  return Boolean(row && row.unfinished === 0 && row.finished >= atLeast)
}
