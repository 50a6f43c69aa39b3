// Silent cascades: the upstream deletes a person's tasks with the person, a contact's bookings with the
// contact, and tells nobody; it changes the deals that named the person (and, after a merge, moves the
// tasks, notes and memberships of the person to the one it was merged into) without touching their
// `updated_at`. When the mirror tombstones a record, the live dependants it has in the mirror (resource
// table: `dependants`) are checked with `show` at once (refresh jobs), so that they do not wait for a
// reconciliation or a full run.
import type { Kysely } from 'kysely'
import type { RecordId, Resource } from '../../resources/index.ts'
import { liveDependants } from '../../store/dependants.ts'
import type { Database } from '../../store/schema.ts'
import type { QueueRecordChecks } from '../job-queue.ts'

/** Queues checks of the live dependants of `tombstoned` in `trx`; returns how many. */
export async function checkDependants(
  trx: Kysely<Database>,
  queueChecks: QueueRecordChecks,
  parent: Resource,
  tombstoned: readonly RecordId[],
): Promise<number> {
  if (parent.dependants.length === 0 || tombstoned.length === 0) return 0
  // Dependants name their parents in numeric columns: a parent with text ids (attachments) has none.
  const parents = tombstoned.filter((id): id is number => typeof id === 'number')
  let queued = 0
  for (const { resource, ids } of await liveDependants(trx, parent, parents)) {
    await queueChecks(trx, resource, ids)
    queued += ids.length
  }
  return queued
}
