// A receiver on the test database, as `start` wires it.
import type { Hono } from 'hono'
import { createLogger } from '../../src/log.ts'
import { createReceiver } from '../../src/receiver/app.ts'
import { createReceiverCounters, type ReceiverCounters } from '../../src/receiver/counters.ts'
import type { InboxWriterOptions } from '../../src/receiver/inbox-writer.ts'
import type { Db } from '../../src/store/database.ts'

export const SECRET = 'test-secret-0123456789abcdef'

export function receiverFor(
  db: Db,
  options: {
    counters?: ReceiverCounters
    onAccepted?: () => void
    writer?: InboxWriterOptions
    previousSecret?: string
  } = {},
): {
  app: Hono
  counters: ReceiverCounters
} {
  const counters = options.counters ?? createReceiverCounters()
  const app = createReceiver({
    db,
    secret: SECRET,
    previousSecret: options.previousSecret,
    logger: createLogger({ level: 'silent' }),
    counters,
    onAccepted: options.onAccepted,
    writer: options.writer,
  })
  return { app, counters }
}
