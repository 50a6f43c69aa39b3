// A receiver wired to a real pg-boss on the test database, as `start` wires it.
import type { Hono } from 'hono'
import type { PgBoss } from 'pg-boss'
import { createLogger } from '../../src/log.ts'
import { createReceiver, type EnqueueDelivery } from '../../src/receiver/app.ts'
import type { Counters } from '../../src/receiver/counters.ts'
import type { Db } from '../../src/store/database.ts'
import { deliveryEnqueuer } from '../../src/sync/job-queue.ts'

export const SECRET = 'test-secret-0123456789abcdef'

export function receiverFor(
  db: Db,
  boss: PgBoss,
  options: { enqueue?: EnqueueDelivery; counters?: Counters } = {},
): {
  app: Hono
  counters: Counters
} {
  const counters = options.counters ?? new Map()
  const app = createReceiver({
    db,
    enqueue: options.enqueue ?? deliveryEnqueuer(boss),
    secret: SECRET,
    logger: createLogger({ level: 'silent' }),
    counters,
  })
  return { app, counters }
}
