// The webhook receiver alone in a process of its own, wired as `start` wires it (one pool, the inbox
// row is the delivery's job), without workers: what it measures is how fast deliveries are taken
// durably, not how fast they are applied.
import { serve } from '@hono/node-server'
import { createLogger } from '../../src/log.ts'
import { createReceiver } from '../../src/receiver/app.ts'
import { createReceiverCounters } from '../../src/receiver/counters.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { childOptions, serveChild } from './child.ts'

export interface ReceiverOptions {
  databaseUrl: string
  secret: string
}

await serveChild(async () => {
  const { databaseUrl, secret } = childOptions<ReceiverOptions>()
  const logger = createLogger({ level: 'warn', pretty: false })
  const pool = createPool(databaseUrl)
  const db = createDb(pool)
  const app = createReceiver({ db, secret, logger, counters: createReceiverCounters(), writer: { pool } })
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started))
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    ready: { port },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        if ('closeAllConnections' in server) server.closeAllConnections()
      })
      await db.destroy()
    },
  }
})
