// A delivery replayed by hand (the status page): the inbox takes it again, and the workers apply it as
// any other, so a replay is idempotent for the mirror (which write wins does not depend on how often a
// payload arrives: store/records/which-wins.ts). A failed or applied delivery goes back to the queue
// as it is. A rejected one is read again as the receiver reads a body (receiver/parse.ts): one that
// reads as a delivery now (a shape a newer crm-sync recognises) is queued with what it says; one that
// still does not stays rejected, with the reason of today.
import { parseEvent, parseModel } from '../../receiver/deliveries.ts'
import { parseBody } from '../../receiver/parse.ts'
import type { Db } from '../../store/database.ts'
import { rejectAgain, requeueDelivery } from '../../store/inbox.ts'
import { readDelivery } from '../../store/inbox-view.ts'
import { storable } from '../../store/jsonb.ts'

export type ReplayResult =
  | { outcome: 'queued' }
  /** Accepted and not applied yet: it is in the queue already. */
  | { outcome: 'waiting' }
  | { outcome: 'rejected'; reason: string }
  | { outcome: 'unknown' }

export async function replayDelivery(db: Db, id: number): Promise<ReplayResult> {
  const row = await readDelivery(db, id)
  if (!row) return { outcome: 'unknown' }
  if (row.status === 'accepted') return { outcome: 'waiting' }
  if (row.status !== 'rejected') {
    await requeueDelivery(db, id)
    return { outcome: 'queued' }
  }
  const model = parseModel(row.model ?? '')
  const event = parseEvent(row.event ?? '')
  if (!model || !event) return { outcome: 'rejected', reason: row.reason ?? 'no model or event' }
  const text = row.body ?? JSON.stringify(row.payload)
  const parsed = parseBody(text, model, event)
  if (!parsed.ok) {
    await rejectAgain(db, id, storable(parsed.reason) as string)
    return { outcome: 'rejected', reason: parsed.reason }
  }
  await requeueDelivery(db, id, {
    shape: parsed.delivery.shape,
    record_id: parsed.delivery.recordId,
    payload: JSON.stringify(storable(parsed.json)),
  })
  return { outcome: 'queued' }
}
