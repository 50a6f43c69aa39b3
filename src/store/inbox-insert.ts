// What the receiver writes to the inbox (sync.inbox): accepted deliveries, many to an insert, and
// refused ones with their reason, each under the delivery's deadline (issue 17): stored before it
// or not at all.
import { CompiledQuery } from 'kysely'
import pg from 'pg'
import { relationOf } from './account-schemas.ts'
import type { Db } from './database.ts'
import type { DeliveryRow } from './inbox.ts'

const INBOX_COLUMNS = 'model, event, shape, record_id, payload, body, reason, headers, status'

// A value as a literal of the simple query below: as the driver would send it as a parameter (an
// object as its JSON), quoted and escaped by the driver's own function. (A simple query cannot carry
// a NUL; none reaches here: the receiver keeps only bodies `storableText` passes, and Node's parser
// refuses NUL in headers.)
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'number') return String(value)
  return pg.escapeLiteral(typeof value === 'string' ? value : JSON.stringify(value))
}

/** The inbox did not take a write before its deadline; nothing of that write was stored. */
export class InboxTimeout extends Error {
  override name = 'InboxTimeout'
}

// SQLSTATE query_canceled: what the statement_timeout below raises (a wait for a lock included).
const QUERY_CANCELED = '57014'

/** How long after its own statement timeout a silent connection is given up as dead. */
const SILENT_CONNECTION_MS = 1_000

/**
 * Runs `write` in a transaction that PostgreSQL cancels once `deadline` (epoch ms) has passed, waits
 * for locks included: a receiver whose insert waits past the sender's patience would store a
 * delivery the sender retries. Throws InboxTimeout when cancelled, or when the deadline had passed
 * by the time a connection was free; either way nothing is written. Costs three round trips more
 * than a bare statement (begin, the setting, commit); the receiver's group commit spreads them.
 */
async function beforeDeadline<T>(db: Db, deadline: number, write: (trx: Db) => Promise<T>): Promise<T> {
  try {
    return await db.transaction().execute(async (trx) => {
      const left = Math.floor(deadline - Date.now())
      if (left <= 0) throw new InboxTimeout('the deadline passed while the write waited for a connection')
      await trx.executeQuery(
        CompiledQuery.raw(`select set_config('statement_timeout', $1, true)`, [String(left)]),
      )
      return write(trx)
    })
  } catch (error) {
    if ((error as { code?: unknown }).code === QUERY_CANCELED)
      throw new InboxTimeout('the database did not finish the write before its deadline', { cause: error })
    throw error
  }
}

/**
 * Inserts accepted deliveries in one statement and returns their ids in the order of `rows`. The
 * identity hands out increasing ids in insertion order, and the rows are inserted in their order.
 * With a `deadline` (epoch ms), nothing is stored unless the insert finishes by then (InboxTimeout).
 */
export async function insertAcceptedDeliveries(
  db: Db,
  rows: DeliveryRow[],
  options: { deadline?: number; pool?: pg.Pool } = {},
): Promise<number[]> {
  if (rows.length === 0) return []
  const { deadline, pool } = options
  if (deadline !== undefined && pool)
    return insertInOneRoundTrip(pool, relationOf(db, 'sync.inbox'), rows, deadline)
  if (deadline !== undefined)
    return beforeDeadline(db, deadline, (trx) => insertAcceptedDeliveries(trx, rows))
  // Written out rather than built by the query builder: this is the receiver's one statement per
  // commit, and the builder took 4% of its CPU.
  const parameters: unknown[] = []
  const tuples: string[] = []
  for (const row of rows) {
    const at = parameters.length
    tuples.push(
      `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, $${at + 6}, $${at + 7}, $${at + 8}, 'accepted')`,
    )
    parameters.push(
      row.model ?? null,
      row.event ?? null,
      row.shape ?? null,
      row.record_id ?? null,
      row.payload ?? null,
      row.body ?? null,
      row.reason ?? null,
      row.headers ?? null,
    )
  }
  // A compiled query passes no plugin: the inbox is named as the account names it (./account-schemas.ts).
  const { rows: inserted } = await db.executeQuery<{ id: number }>(
    CompiledQuery.raw(
      `insert into ${relationOf(db, 'sync.inbox')} (${INBOX_COLUMNS}) values ${tuples.join(', ')} returning id`,
      parameters,
    ),
  )
  return inserted.map((row) => Number(row.id)).sort((a, b) => a - b)
}

/**
 * insertAcceptedDeliveries under a deadline in one round trip rather than four: the setting and the
 * insert go as one simple query, which PostgreSQL runs as one transaction (rolled back whole if the
 * insert fails or is cancelled), so the values go as literals. Under load every round trip waits for
 * the event loop and for PostgreSQL's turn at a core; four of them made the insert, and the
 * acknowledgement, several times slower (docs/performance.md, "Ingest").
 */
async function insertInOneRoundTrip(
  pool: pg.Pool,
  relation: string,
  rows: DeliveryRow[],
  deadline: number,
): Promise<number[]> {
  const client = await pool.connect()
  // A connection that did not answer is dropped rather than handed back: it may be dead (a failover,
  // a proxy that cut it without a reset), and the receiver's one insert in flight would wait on it.
  let broken: Error | undefined
  try {
    const left = Math.floor(deadline - Date.now())
    if (left <= 0) throw new InboxTimeout('the deadline passed while the write waited for a connection')
    const tuples = rows.map(
      (row) =>
        `(${[row.model, row.event, row.shape, row.record_id, row.payload, row.body, row.reason, row.headers].map(literal).join(', ')}, 'accepted')`,
    )
    // (`query_timeout` per query is the driver's, which its types list for the client only.)
    const query: pg.QueryConfig & { query_timeout: number } = {
      text: `select set_config('statement_timeout', '${left}', true);
       insert into ${relation} (${INBOX_COLUMNS}) values ${tuples.join(', ')} returning id`,
      // PostgreSQL cancels the insert at the deadline; no answer a second later: the connection is gone.
      query_timeout: left + SILENT_CONNECTION_MS,
    }
    const results = (await client.query(query)) as unknown as pg.QueryResult<{ id: number }>[]
    return (results[1]?.rows ?? []).map((row) => Number(row.id)).sort((a, b) => a - b)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === QUERY_CANCELED)
      throw new InboxTimeout('the database did not finish the write before its deadline', { cause: error })
    // No SQLSTATE: the connection failed or stayed silent, not the statement.
    const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
    if (!sqlState && !(error instanceof InboxTimeout)) {
      broken = error as Error
      if (Date.now() >= deadline)
        throw new InboxTimeout('the database did not answer before the deadline', { cause: error })
    }
    throw error
  } finally {
    client.release(broken)
  }
}

/** Keeps a delivery that was refused, with its reason; `deadline` as in insertAcceptedDeliveries. */
export async function insertRejectedDelivery(
  db: Db,
  row: DeliveryRow & { reason: string },
  options: { deadline?: number } = {},
): Promise<number> {
  const { deadline } = options
  if (deadline !== undefined) return beforeDeadline(db, deadline, (trx) => insertRejectedDelivery(trx, row))
  const { id } = await db
    .insertInto('sync.inbox')
    .values({ ...row, status: 'rejected' })
    .returning('id')
    .executeTakeFirstOrThrow()
  return id
}
