// Member sets against the sandbox's truth: for every resource with members (crm.filter_groups), the
// rows of its member table for each live group are exactly the group's members upstream now, and no
// group gone upstream keeps any. One TableTruth per member table, a group a "record" of it. The
// mirror may lag here until the next full reconciliation (docs/mirror.md), so mirror-truth.ts
// compares member sets only when asked to (`members: true`).
import { sql } from 'kysely'
import { type AnyResource, resources } from '../src/resources/index.ts'
import type { Db } from '../src/store/database.ts'
import type { Sandbox } from './sandbox.ts'
import type { Difference, TableTruth } from './table-truth.ts'

/** The resource a sandbox collection is (`people` → crm.people). */
const resourceOf = (collection: string) =>
  resources.find((resource) => resource.service === 'crm' && resource.path === collection)?.name ?? collection

/** One resource's member sets against the sandbox (`limit` differences at most). */
export async function compareMembers(
  db: Db,
  sandbox: Pick<Sandbox, 'control'>,
  resource: AnyResource,
  limit = 10,
): Promise<TableTruth | null> {
  const members = resource.members
  // The sandbox's groups are its filter groups.
  if (!members || resource.path !== 'filter_groups') return null
  const { crm } = sandbox.control
  const { rows } = await sql<{ group: string; member: string }>`
    select ${sql.ref(members.groupColumn)}::text as group, member_resource || ' ' || member_id as member
    from ${sql.table(members.table)}`.execute(db)
  const held = new Map<number, string[]>()
  for (const row of rows) held.set(Number(row.group), [...(held.get(Number(row.group)) ?? []), row.member])
  const differences: Difference[] = []
  const note = (id: number, what: string) => {
    if (differences.length < limit) differences.push({ table: members.table, id, what })
  }
  const live = crm.liveIds('filter_groups')
  let inSync = 0
  for (const id of live) {
    const truth = crm.filterGroupMembers(id)
    const expected = (truth?.ids ?? []).map((member) => `${resourceOf(truth?.collection ?? '')} ${member}`)
    const mirrored = held.get(id) ?? []
    const missing = expected.filter((member) => !mirrored.includes(member))
    const extra = mirrored.filter((member) => !expected.includes(member))
    if (missing.length === 0 && extra.length === 0) inSync++
    else note(id, `members: missing [${missing.join(', ')}], not members [${extra.join(', ')}]`)
  }
  const liveSet = new Set(live)
  let stale = 0
  for (const id of held.keys()) {
    if (liveSet.has(id)) continue
    stale++
    note(id, 'stale: members of a group deleted upstream')
  }
  return { table: members.table, upstream: live.length, inSync, stale, differences }
}
