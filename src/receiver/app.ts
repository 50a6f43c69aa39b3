// The door through which changes enter. A delivery is answered 2xx only after its inbox row is
// committed: that row is the job (workers take accepted rows from the inbox). It never gets a 500,
// whatever it holds.
//
// Route: POST /webhooks/crm/<WEBHOOK_SECRET>/<model>/<event>. Each request goes through three steps,
// each with a typed result that the handler answers and counts: verify (the secret, verify.ts), parse
// (the path, then the body: parse.ts, read by body.ts) and store (the inbox, store.ts).
import { type Context, Hono } from 'hono'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import { announcedLength, readBody, WEBHOOK_BODY_LIMIT } from './body.ts'
import type { ReceiverCounters } from './counters.ts'
import { keptHeaders } from './headers.ts'
import type { InboxWriterOptions } from './inbox-writer.ts'
import { createDeliveryStore } from './keep.ts'
import { parseBody, parsePath } from './parse.ts'
import { createVerifier } from './verify.ts'

export { webhookPath } from './parse.ts'

export interface ReceiverDependencies {
  db: Db
  secret: string
  /** WEBHOOK_SECRET_PREVIOUS: accepted beside `secret` until the operator removes it. */
  previousSecret?: string | null
  logger: Logger
  counters: ReceiverCounters
  /** Told once a delivery is committed (its inbox id), so that a worker of this process takes it at once. */
  onAccepted?: (inboxId: number) => void
  /** How the inbox writer groups inserts (see inbox-writer.ts), and the pool it may write through. */
  writer?: InboxWriterOptions
  /** Where the account's deliveries come (`/accounts/north`: `/accounts/north/webhooks/...`); default the root. */
  basePath?: string
}

const tooLarge = (c: Context) => c.json({ error: `the body exceeds ${WEBHOOK_BODY_LIMIT} bytes` }, 413)

export function createReceiver({
  db,
  secret,
  previousSecret,
  logger,
  counters,
  onAccepted,
  writer,
  basePath = '',
}: ReceiverDependencies): Hono {
  const app = basePath ? new Hono().basePath(basePath) : new Hono()
  const verify = createVerifier(secret, previousSecret)
  const store = createDeliveryStore(db, writer)
  const secrets = [secret, previousSecret ?? '']

  // A body with its length announced (every upstream delivery) is judged by that length before it is
  // read; a chunked one is counted as it streams (readBody).
  app.use('/webhooks/*', async (c, next) => {
    const length = announcedLength(c)
    return length !== null && length > WEBHOOK_BODY_LIMIT ? tooLarge(c) : next()
  })

  app.all('/webhooks/*', async (c) => {
    const { presented, route } = parsePath(c.req.path.slice(basePath.length))
    const verified = verify(presented)
    if (!verified.ok) {
      counters.unauthorized += 1
      return c.json({ error: 'unauthorized' }, 401)
    }
    if (c.req.method !== 'POST')
      return c.json({ error: 'method not allowed; deliveries are POSTed' }, 405, { Allow: 'POST' })
    if (verified.secret === 'previous') counters.previousSecret += 1
    if (!route.ok) {
      const { model, event, outcome } = route
      counters.deliveries.add({ model, event, shape: 'unknown', outcome })
      return c.json(
        { error: 'no such webhook endpoint; expected /webhooks/crm/<secret>/<model>/<event>' },
        404,
      )
    }

    const { model, event } = route
    const body = await readBody(c)
    if (!body.ok && body.reason === 'aborted') {
      // There is nothing to keep, and the database has nothing to do with it.
      counters.deliveries.add({ model, event, shape: 'unknown', outcome: 'aborted' })
      logger.warn(
        { model, event, reason: body.message },
        'a webhook delivery ended before its body arrived; nothing kept',
      )
      return c.json({ error: 'the body ended before it arrived whole' }, 400)
    }
    // The rest of a chunked body stays unread (the Node adapter cannot cancel its stream), so the
    // socket cannot serve another request: say so rather than let the client reuse it and be reset.
    if (!body.ok) {
      c.header('Connection', 'close')
      return tooLarge(c)
    }

    const stored = await store({
      model,
      event,
      text: body.text,
      headers: keptHeaders(c.req.raw.headers, secrets),
      parsed: parseBody(body.text, model, event),
    })
    counters.deliveries.add({ model, event, shape: stored.shape, outcome: stored.outcome })
    switch (stored.outcome) {
      case 'accepted':
        onAccepted?.(stored.inboxId)
        return c.json({ status: 'accepted', inbox_id: stored.inboxId }, 200)
      case 'rejected':
        return c.json({ error: stored.reason }, 400)
      case 'unavailable':
        // Every 503 says why; none was acknowledged, so the sender keeps the delivery and retries it.
        logger.error({ err: stored.error, model, event }, 'could not store a webhook delivery; answered 503')
        return c.json({ error: `${stored.reason}; retry later` }, 503, { 'Retry-After': '5' })
    }
  })

  return app
}
