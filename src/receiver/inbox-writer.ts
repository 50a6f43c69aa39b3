// Group commit for the receiver: deliveries that arrive while earlier ones are being written go
// together in the next insert. A lone delivery is written at once; under load, one statement and
// one commit carry many, so the database does far less work per delivery. Each caller's promise
// settles only when its own row is committed.
import type { Db } from '../store/database.ts'
import { type DeliveryRow, insertAcceptedDeliveries } from '../store/inbox.ts'

export interface InboxWriterOptions {
  /** Inserts in flight at once (each holds a pool connection). */
  concurrency?: number
  /** Rows in one insert at most. */
  maxBatch?: number
}

interface Waiting {
  row: DeliveryRow
  resolve(id: number): void
  reject(error: unknown): void
}

export type InboxWriter = (row: DeliveryRow) => Promise<number>

export function createInboxWriter(db: Db, options: InboxWriterOptions = {}): InboxWriter {
  const concurrency = options.concurrency ?? 4
  const maxBatch = options.maxBatch ?? 100
  let waiting: Waiting[] = []
  let inFlight = 0

  async function write(batch: Waiting[]) {
    try {
      const ids = await insertAcceptedDeliveries(
        db,
        batch.map((entry) => entry.row),
      )
      for (const [index, entry] of batch.entries()) entry.resolve(ids[index] as number)
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.reject(error)
        return
      }
      // One row the database refuses must not cost the others: each is tried on its own.
      await Promise.all(batch.map((entry) => write([entry])))
    }
  }

  function flush() {
    while (inFlight < concurrency && waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch)
      waiting = waiting.slice(batch.length)
      inFlight++
      void write(batch).finally(() => {
        inFlight--
        flush()
      })
    }
  }

  return (row) =>
    new Promise<number>((resolve, reject) => {
      waiting.push({ row, resolve, reject })
      flush()
    })
}
