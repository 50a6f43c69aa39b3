// Whether the mirror holds what the sandbox holds (sandbox/mirror-truth.ts), for the resources that
// have webhooks, and whether the runs have settled: what "converged" means for the benchmarks.
import { sql } from 'kysely'
import type { CrmCollection, Sandbox } from '../../sandbox/index.ts'
import { compareMirror, describe, simulatedResources } from '../../sandbox/mirror-truth.ts'
import type { AnyResource } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'

const hooked = (resource: AnyResource) => resource.webhookModel !== null

/** The resources with webhooks, by the sandbox's collection and the mirror's table. */
export const HOOKED = simulatedResources
  .filter(hooked)
  .map((resource) => ({ collection: resource.path as CrmCollection, table: resource.name }))

/** The first difference found, or null when the mirror matches the sandbox. */
export async function firstDifference(db: Db, sandbox: Sandbox): Promise<string | null> {
  return describe(await compareMirror(db, sandbox, { include: hooked, limit: 1 }), 1)[0] ?? null
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
