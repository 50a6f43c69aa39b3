// DESIGN.md's definition of "in sync", checked against the sandbox (sandbox/mirror-truth.ts), as the
// tests assert it: the differences as lines, empty when converged.
import type { Sandbox } from '../../sandbox/index.ts'
import { compareMirror, describe } from '../../sandbox/mirror-truth.ts'
import type { Db } from '../../src/store/database.ts'

export interface TruthOptions {
  /** Compare the reservation service's resources too (default: the CRM's only). */
  reservation?: boolean
  /** Differences listed at most (default 10). */
  limit?: number
  /** Only these resources (qualified names). */
  only?: readonly string[]
  /** Compare the groups' member sets too (crm.filter_group_members), which may lag (default false). */
  members?: boolean
  /** Compare references by id too (a task's attachable, a deal's people; sandbox/reference-truth.ts). */
  references?: boolean
  /** Compare people's historic events and assistants too (sandbox/person-detail-truth.ts). */
  details?: boolean
}

/** Differences between the mirror and the sandbox; empty when converged. At most `limit` are listed. */
export async function differences(db: Db, sandbox: Sandbox, options: TruthOptions = {}): Promise<string[]> {
  const limit = options.limit ?? 10
  const tables = await compareMirror(db, sandbox, {
    include: (resource) =>
      (options.only === undefined || options.only.includes(resource.name)) &&
      (options.reservation === true || resource.service === 'crm'),
    limit,
    members: options.members === true,
    references: options.references === true,
    details: options.details === true,
  })
  return describe(tables, limit)
}
