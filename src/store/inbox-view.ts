// The webhook inbox as the status page lists it: newest first, filtered by outcome, model, event and
// time, a page at a time; and one delivery whole. Reads only (the writes are inbox.ts').
import type { Db } from './database.ts'
import type { InboxRow } from './inbox.ts'
import type { InboxStatus } from './schema.ts'

export interface DeliveryFilter {
  status?: InboxStatus
  model?: string
  event?: string
  /** Received at or after this time. */
  since?: Date
  /** Only deliveries older than this id: the next page. */
  before?: number
  /** At most this many (default 50). */
  limit?: number
}

/** A delivery as a list shows it: no payload or body. */
export type DeliverySummary = Pick<
  InboxRow,
  | 'id'
  | 'received_at'
  | 'model'
  | 'event'
  | 'shape'
  | 'record_id'
  | 'status'
  | 'reason'
  | 'attempts'
  | 'error'
>

export async function listDeliveries(db: Db, filter: DeliveryFilter = {}): Promise<DeliverySummary[]> {
  let query = db
    .selectFrom('sync.inbox')
    .select([
      'id',
      'received_at',
      'model',
      'event',
      'shape',
      'record_id',
      'status',
      'reason',
      'attempts',
      'error',
    ])
    .orderBy('id', 'desc')
    .limit(filter.limit ?? 50)
  if (filter.status) query = query.where('status', '=', filter.status)
  if (filter.model) query = query.where('model', '=', filter.model)
  if (filter.event) query = query.where('event', '=', filter.event)
  if (filter.since) query = query.where('received_at', '>=', filter.since)
  if (filter.before !== undefined) query = query.where('id', '<', filter.before)
  return query.execute()
}

export async function readDelivery(db: Db, id: number): Promise<InboxRow | undefined> {
  return db.selectFrom('sync.inbox').selectAll().where('id', '=', id).executeTakeFirst()
}
