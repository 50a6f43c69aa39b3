// The door through which changes enter. A delivery is answered 2xx only after its inbox row is
// committed: that row is the job (workers take accepted rows from the inbox). It never gets a 500,
// whatever it holds.
//
// Route: POST /webhooks/crm/<WEBHOOK_SECRET>/<model>/<event>. The upstream signs nothing, so the
// secret travels in the URL that crm-sync registered, as a path segment (see README). During a rotation
// the previous secret (WEBHOOK_SECRET_PREVIOUS) is accepted too, and such deliveries are counted.
import { type Context, Hono } from 'hono'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { InboxTimeout, insertRejectedDelivery } from '../store/inbox.ts'
import { MAX_DEPTH, nestedDeeperThan, numbersFit, storable, storableText } from '../store/jsonb.ts'
import { type Counters, increment } from './counters.ts'
import {
  classifyDelivery,
  parseEvent,
  parseModel,
  segmentLabel,
  type WebhookEvent,
  type WebhookModel,
} from './deliveries.ts'
import {
  createInboxWriter,
  DELIVERY_BUDGET_MS,
  InboxBusy,
  type InboxWriterOptions,
  settledBy,
} from './inbox-writer.ts'
import { secretsMatcher } from './secret.ts'

export const WEBHOOK_BODY_LIMIT = 1024 * 1024

export interface ReceiverDependencies {
  db: Db
  secret: string
  /** WEBHOOK_SECRET_PREVIOUS: accepted beside `secret` until the operator removes it. */
  previousSecret?: string | null
  logger: Logger
  counters: Counters
  /** Told once a delivery is committed, so that a worker of this process takes it at once. */
  onAccepted?: () => void
  /** How the inbox writer groups inserts (see inbox-writer.ts). */
  writer?: InboxWriterOptions
}

/** The path crm-sync registers for a model and event; the secret is a path segment. */
export function webhookPath(secret: string, model: WebhookModel, event: WebhookEvent): string {
  return `/webhooks/crm/${encodeURIComponent(secret)}/${model}/${event}`
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Why an authenticated POST has no endpoint: a model or an event crm-sync does not mirror, or a path
 * of another shape. Answered 404 (the contract), and counted.
 */
function unrouted(
  service: string | undefined,
  rest: string[],
  model: WebhookModel | undefined,
): 'unknown_path' | 'unknown_model' | 'unknown_event' {
  if (service !== 'crm' || rest.length > 0) return 'unknown_path'
  return model ? 'unknown_event' : 'unknown_model'
}

/** The body's announced length; null for a chunked body (or a length that is not a number). */
function announcedLength(c: Context): number | null {
  const length = c.req.header('content-length')
  if (length === undefined || c.req.header('transfer-encoding') !== undefined) return null
  const bytes = Number(length)
  return Number.isFinite(bytes) ? bytes : null
}

/**
 * The body as text (UTF-8, a leading BOM dropped); null when a chunked body outgrows the limit.
 * Throws when the request's stream fails. A body whose length is announced is read straight from the
 * socket by the Node adapter (Node's parser stops at the length); going through `c.req.raw.body` for
 * every delivery made the adapter build a full Request and web stream each time (8% of the receiver's CPU).
 */
async function readBody(c: Context): Promise<string | null> {
  if (announcedLength(c) !== null) return c.req.text()
  const stream = c.req.raw.body
  if (!stream) return ''
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > WEBHOOK_BODY_LIMIT) {
      await reader.cancel().catch(() => {})
      return null
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks, size))
}

export function createReceiver({
  db,
  secret,
  previousSecret,
  logger,
  counters,
  onAccepted,
  writer,
}: ReceiverDependencies): Hono {
  const app = new Hono()
  const store = createInboxWriter(db, writer)
  const budgetMs = writer?.budgetMs ?? DELIVERY_BUDGET_MS
  const whichSecret = secretsMatcher(previousSecret ? [secret, previousSecret] : [secret])
  // Every 503 says why; none was acknowledged, so the sender keeps the delivery and retries it.
  const unavailable = (c: Context, error: unknown) => {
    const reason =
      error instanceof InboxBusy
        ? 'too many deliveries are waiting to be stored'
        : error instanceof InboxTimeout
          ? `the database did not store the delivery within ${budgetMs / 1000} s`
          : 'the delivery could not be stored'
    return c.json({ error: `${reason}; retry later` }, 503, { 'Retry-After': '5' })
  }

  const tooLarge = (c: Context) => c.json({ error: `the body exceeds ${WEBHOOK_BODY_LIMIT} bytes` }, 413)
  // A body with its length announced (every upstream delivery) is judged by that length before it is
  // read; a chunked one is counted as it streams (readBody).
  app.use('/webhooks/*', async (c, next) => {
    const length = announcedLength(c)
    return length !== null && length > WEBHOOK_BODY_LIMIT ? tooLarge(c) : next()
  })

  app.all('/webhooks/*', async (c) => {
    const segments = c.req.path.split('/').filter(Boolean).slice(1).map(decodeSegment)
    const [service, presented, modelSegment = '', eventSegment = '', ...rest] = segments
    const matched = whichSecret(presented)
    if (matched < 0) {
      increment(counters, 'unauthorized')
      return c.json({ error: 'unauthorized' }, 401)
    }
    if (c.req.method !== 'POST')
      return c.json({ error: 'method not allowed; deliveries are POSTed' }, 405, { Allow: 'POST' })
    if (matched > 0) increment(counters, 'previous-secret')
    const model = parseModel(modelSegment)
    const event = parseEvent(eventSegment)
    if (service !== 'crm' || rest.length > 0 || !model || !event) {
      const labels = `${segmentLabel(modelSegment)}:${segmentLabel(eventSegment)}`
      increment(counters, `delivery:${labels}:unknown:${unrouted(service, rest, model)}`)
      return c.json(
        { error: 'no such webhook endpoint; expected /webhooks/crm/<secret>/<model>/<event>' },
        404,
      )
    }

    let body: string | null
    try {
      body = await readBody(c)
    } catch (error) {
      // The request's stream failed: the sender hung up (or timed out) before its body arrived.
      // There is nothing to keep, and the database has nothing to do with it.
      increment(counters, `delivery:${model}:${event}:unknown:aborted`)
      logger.warn(
        { model, event, reason: error instanceof Error ? error.message : String(error) },
        'a webhook delivery ended before its body arrived; nothing kept',
      )
      return c.json({ error: 'the body ended before it arrived whole' }, 400)
    }
    // The rest of a chunked body stays unread (the Node adapter cannot cancel its stream), so the
    // socket cannot serve another request: say so rather than let the client reuse it and be reset.
    if (body === null) {
      c.header('Connection', 'close')
      return tooLarge(c)
    }

    try {
      const reject = async (
        reason: string,
        fields: { shape?: string; payload?: unknown; record_id?: number },
      ) => {
        const row = {
          model,
          event,
          shape: fields.shape ?? null,
          record_id: fields.record_id ?? null,
          payload: fields.payload === undefined ? null : JSON.stringify(storable(fields.payload)),
          body: fields.payload === undefined ? (storable(body) as string) : null,
          // (JSON.parse's message quotes the body, NUL included)
          reason: storable(reason) as string,
        }
        // A refusal is kept under the same deadline as an acceptance: a locked inbox must not hang it.
        const deadline = Date.now() + budgetMs
        await settledBy(insertRejectedDelivery(db, row, { deadline }), deadline)
        increment(counters, `delivery:${model}:${event}:${fields.shape ?? 'unknown'}:rejected`)
        return c.json({ error: reason }, 400)
      }

      let parsed: unknown
      try {
        parsed = JSON.parse(body)
      } catch (error) {
        return await reject(`malformed JSON: ${(error as Error).message}`, {})
      }
      // Kept as text: PostgreSQL's jsonb, and JavaScript, cannot take JSON nested many thousands deep.
      if (nestedDeeperThan(body, MAX_DEPTH)) return await reject(`nested deeper than ${MAX_DEPTH} levels`, {})
      const classified = classifyDelivery(parsed, model, event)
      if (!classified.ok) return await reject(classified.reason, { shape: classified.shape, payload: parsed })

      const { delivery } = classified
      const inboxId = await store({
        model,
        event,
        shape: delivery.shape,
        record_id: delivery.recordId,
        // The body as it came when jsonb takes it so; otherwise as JavaScript read it, made storable
        // (a number beyond numeric's range is Infinity there, which JSON writes as null).
        payload: (numbersFit(body) ? storableText(body) : undefined) ?? JSON.stringify(storable(parsed)),
        body: null,
        reason: null,
        job_id: null,
      })
      increment(counters, `delivery:${model}:${event}:${delivery.shape}:accepted`)
      onAccepted?.()
      return c.json({ status: 'accepted', inbox_id: inboxId }, 200)
    } catch (error) {
      increment(counters, `delivery:${model}:${event}:unknown:unavailable`)
      logger.error({ err: error, model, event }, 'could not store a webhook delivery; answered 503')
      return unavailable(c, error)
    }
  })

  return app
}
