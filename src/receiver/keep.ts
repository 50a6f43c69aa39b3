// The receiver's third step: a parsed delivery kept in the inbox, accepted (the row is the job that
// workers take) or rejected (kept with its reason), under the delivery's budget. Whatever fails here
// makes the delivery unavailable: not stored, so the sender keeps it and retries it.
import type { Db } from '../store/database.ts'
import { InboxTimeout, insertRejectedDelivery } from '../store/inbox-insert.ts'
import { numbersFit, storable, storableText } from '../store/jsonb.ts'
import type { DeliveryShape, WebhookEvent, WebhookModel } from './deliveries.ts'
import {
  createInboxWriter,
  DELIVERY_BUDGET_MS,
  InboxBusy,
  type InboxWriterOptions,
  settledBy,
} from './inbox-writer.ts'
import type { ParsedBody } from './parse.ts'

export interface DeliveryToStore {
  model: WebhookModel
  event: WebhookEvent
  /** The body as it came. */
  text: string
  /** The request's headers, secrets masked (headers.ts). */
  headers: Record<string, string>
  parsed: ParsedBody
}

export type Stored =
  | { outcome: 'accepted'; shape: DeliveryShape; inboxId: number }
  | { outcome: 'rejected'; shape: DeliveryShape | 'unknown'; reason: string }
  | {
      outcome: 'unavailable'
      shape: 'unknown'
      error: unknown
      /** Why, for the sender: the inbox was full, the database too slow, or the insert failed. */
      reason: string
    }

export type DeliveryStore = (delivery: DeliveryToStore) => Promise<Stored>

export function createDeliveryStore(db: Db, options: InboxWriterOptions = {}): DeliveryStore {
  const writeAccepted = createInboxWriter(db, options)
  const budgetMs = options.budgetMs ?? DELIVERY_BUDGET_MS

  const accept = async (
    { model, event, text, headers }: DeliveryToStore,
    parsed: Extract<ParsedBody, { ok: true }>,
  ): Promise<Stored> => {
    const { delivery } = parsed
    const inboxId = await writeAccepted({
      model,
      event,
      shape: delivery.shape,
      record_id: delivery.recordId,
      // The body as it came when jsonb takes it so; otherwise as JavaScript read it, made storable
      // (a number beyond numeric's range is Infinity there, which JSON writes as null).
      payload: (numbersFit(text) ? storableText(text) : undefined) ?? JSON.stringify(storable(parsed.json)),
      body: null,
      reason: null,
      headers: JSON.stringify(headers),
    })
    return { outcome: 'accepted', shape: delivery.shape, inboxId }
  }

  const reject = async (
    { model, event, text, headers }: DeliveryToStore,
    parsed: Extract<ParsedBody, { ok: false }>,
  ): Promise<Stored> => {
    const row = {
      model,
      event,
      shape: parsed.shape ?? null,
      record_id: null,
      payload: parsed.json === undefined ? null : JSON.stringify(storable(parsed.json)),
      body: parsed.json === undefined ? (storable(text) as string) : null,
      reason: storable(parsed.reason) as string,
      headers: JSON.stringify(headers),
    }
    // A refusal is kept under the same deadline as an acceptance: a locked inbox must not hang it.
    const deadline = Date.now() + budgetMs
    await settledBy(insertRejectedDelivery(db, row, { deadline }), deadline)
    return { outcome: 'rejected', shape: parsed.shape ?? 'unknown', reason: parsed.reason }
  }

  return async (delivery) => {
    try {
      const { parsed } = delivery
      return parsed.ok ? await accept(delivery, parsed) : await reject(delivery, parsed)
    } catch (error) {
      const reason =
        error instanceof InboxBusy
          ? 'too many deliveries are waiting to be stored'
          : error instanceof InboxTimeout
            ? `the database did not store the delivery within ${budgetMs / 1000} s`
            : 'the delivery could not be stored'
      return { outcome: 'unavailable', shape: 'unknown', error, reason }
    }
  }
}
