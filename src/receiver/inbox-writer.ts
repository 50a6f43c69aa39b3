// Group commit for the receiver: deliveries that arrive while earlier ones are being written go
// together in the next insert. A lone delivery is written at once; under load, one statement and
// one commit carry many, so the database does far less work per delivery. Each caller's promise
// settles only when its own row is committed.
//
// Bounded in time and in size (issue 17): a delivery is stored within its budget or not at all
// (InboxTimeout), and one that finds `maxWaiting` deliveries ahead of it is refused at once
// (InboxBusy). Either way the receiver answers 503 and the sender retries; a database that is slow
// never makes a delivery wait past the sender's patience and then store it anyway (a duplicate of
// the sender's retry).
import type pg from 'pg'
import type { Db } from '../store/database.ts'
import type { DeliveryRow } from '../store/inbox.ts'
import { InboxTimeout, insertAcceptedDeliveries } from '../store/inbox-insert.ts'

/**
 * 5 s: a healthy insert commits in milliseconds, so 5 s rides over a short lock (a migration's, which
 * gives up after 3 s; a vacuum's truncation) while staying far inside a webhook sender's timeout
 * (this CRM gives up after 30 s; many senders after 10 s), so a stored delivery is answered before
 * its sender retries it.
 */
export const DELIVERY_BUDGET_MS = 5_000

/**
 * 1,000 deliveries: ten full inserts, well under a second of a healthy database's work. A delivery
 * that finds more waiting ahead of it would only wait for its budget to run out; refusing it at once
 * also bounds the memory the waiting bodies hold.
 */
export const MAX_WAITING_DELIVERIES = 1_000

// When the insert has not settled this long after its deadline (a connection that never comes, a
// network that hangs), the callers are answered anyway; the insert itself, cancelled by PostgreSQL or
// refused after the deadline, stores nothing.
const ANSWER_GRACE_MS = 1_000

export interface InboxWriterOptions {
  /**
   * Inserts in flight at once (each holds a pool connection). One by default: the deliveries that
   * arrive while it commits go together in the next, so each commit carries more of them (3 at 1,000
   * deliveries a second against 1.5 with four in flight, and 4,639 acknowledged a second at most
   * against 2,823: docs/performance.md, "Ingest").
   */
  concurrency?: number
  /** Rows in one insert at most. */
  maxBatch?: number
  /** How long a delivery may take to be stored, from being handed over (ms). */
  budgetMs?: number
  /** Deliveries waiting for an insert at most; one more is refused at once. */
  maxWaiting?: number
  /** The pool behind `db`: when given, each insert takes one round trip (store/inbox-insert.ts). */
  pool?: pg.Pool
}

/** Too many deliveries wait to be stored; this one was refused without waiting. */
export class InboxBusy extends Error {
  override name = 'InboxBusy'
}

interface Waiting {
  row: DeliveryRow
  deadline: number
  resolve(id: number): void
  reject(error: unknown): void
}

export type InboxWriter = (row: DeliveryRow) => Promise<number>

/** The outcome of a write bounded by `deadline` (epoch ms), or InboxTimeout if it has none soon after. */
export function settledBy<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new InboxTimeout('the database did not answer before the deadline')),
      Math.max(0, deadline + ANSWER_GRACE_MS - Date.now()),
    )
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

export function createInboxWriter(db: Db, options: InboxWriterOptions = {}): InboxWriter {
  const concurrency = options.concurrency ?? 1
  const maxBatch = options.maxBatch ?? 100
  const budgetMs = options.budgetMs ?? DELIVERY_BUDGET_MS
  const maxWaiting = options.maxWaiting ?? MAX_WAITING_DELIVERIES
  let waiting: Waiting[] = []
  let inFlight = 0
  let expiry: NodeJS.Timeout | undefined

  // Whoever waits out its budget in the queue is answered at its deadline, without a write. Entries
  // queue in the order of their deadlines, so one timer, for the first, serves them all.
  function expire() {
    clearTimeout(expiry)
    expiry = undefined
    const now = Date.now()
    let count = 0
    while (count < waiting.length && (waiting[count] as Waiting).deadline <= now) count++
    const expired = waiting.slice(0, count)
    waiting = waiting.slice(count)
    for (const entry of expired)
      entry.reject(new InboxTimeout('the delivery waited for an insert until its deadline'))
    watchDeadlines()
  }

  function watchDeadlines() {
    const first = waiting[0]
    if (expiry || !first) return
    expiry = setTimeout(expire, Math.max(0, first.deadline - Date.now()))
    expiry.unref()
  }

  async function write(batch: Waiting[]) {
    // The oldest entry comes first: its deadline binds the whole insert.
    const deadline = Math.min(...batch.map((entry) => entry.deadline))
    const insert = insertAcceptedDeliveries(
      db,
      batch.map((entry) => entry.row),
      { deadline, pool: options.pool },
    )
    try {
      const ids = await settledBy(insert, deadline)
      for (const [index, entry] of batch.entries()) entry.resolve(ids[index] as number)
    } catch (error) {
      if (batch.length === 1 || error instanceof InboxTimeout) {
        for (const entry of batch) entry.reject(error)
      } else {
        // One row the database refuses must not cost the others: each is tried on its own, one after
        // the other, so that their ids keep the order they arrived in (the order they are applied in).
        for (const entry of batch) await write([entry])
      }
    }
    // The connection stays counted until the insert itself ends, answered or not.
    await insert.catch(() => {})
  }

  function flush() {
    if ((waiting[0]?.deadline ?? Number.POSITIVE_INFINITY) <= Date.now()) expire()
    while (inFlight < concurrency && waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch)
      waiting = waiting.slice(batch.length)
      inFlight++
      void write(batch).finally(() => {
        inFlight--
        flush()
      })
    }
    watchDeadlines()
  }

  return (row) => {
    if (waiting.length >= maxWaiting)
      return Promise.reject(new InboxBusy(`${waiting.length} deliveries are waiting to be stored`))
    return new Promise<number>((resolve, reject) => {
      waiting.push({ row, deadline: Date.now() + budgetMs, resolve, reject })
      flush()
    })
  }
}
