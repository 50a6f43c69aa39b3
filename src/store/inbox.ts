// The webhook inbox (sync.inbox): every delivery that passed the secret check, accepted or rejected.
// Accepted deliveries are also the queue of work: the receiver's insert is all it needs to commit
// before answering, and workers take them oldest first (`for update skip locked`, so replicas share).
import { CompiledQuery, type Insertable, type Kysely, type Selectable, sql } from 'kysely'
import pg from 'pg'
import { relationOf } from './account-schemas.ts'
import type { Db } from './database.ts'
import type { Database, InboxTable } from './schema.ts'

export type DeliveryRow = Omit<
  Insertable<InboxTable>,
  'id' | 'received_at' | 'status' | 'processed_at' | 'attempts' | 'available_at' | 'error'
>

export type InboxRow = Selectable<InboxTable>

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
  try {
    const left = Math.floor(deadline - Date.now())
    if (left <= 0) throw new InboxTimeout('the deadline passed while the write waited for a connection')
    const tuples = rows.map(
      (row) =>
        `(${[row.model, row.event, row.shape, row.record_id, row.payload, row.body, row.reason, row.headers].map(literal).join(', ')}, 'accepted')`,
    )
    const results = (await client.query(
      `select set_config('statement_timeout', '${left}', true);
       insert into ${relation} (${INBOX_COLUMNS}) values ${tuples.join(', ')} returning id`,
    )) as unknown as pg.QueryResult<{ id: number }>[]
    return (results[1]?.rows ?? []).map((row) => Number(row.id)).sort((a, b) => a - b)
  } catch (error) {
    if ((error as { code?: unknown }).code === QUERY_CANCELED)
      throw new InboxTimeout('the database did not finish the write before its deadline', { cause: error })
    throw error
  } finally {
    client.release()
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

/**
 * Takes up to `limit` deliveries that wait to be applied, oldest first, locked until `trx` ends;
 * deliveries another worker holds are passed over. `ids` narrows the take to those deliveries;
 * `after` to deliveries of a greater id, so that the index scan starts there rather than walking the
 * entries of every delivery processed since the last vacuum (docs/performance.md, "Ingest").
 */
export async function claimDeliveries(
  trx: Kysely<Database>,
  limit: number,
  { ids, after }: { ids?: number[]; after?: number } = {},
): Promise<InboxRow[]> {
  let query = trx
    .selectFrom('sync.inbox')
    .selectAll()
    .where('status', '=', 'accepted')
    .where((eb) => eb.or([eb('available_at', 'is', null), eb('available_at', '<=', sql<Date>`now()`)]))
  if (ids) query = query.where('id', 'in', ids.length ? ids : [0])
  if (after !== undefined && after > 0) query = query.where('id', '>', after)
  return query.orderBy('id').limit(limit).forUpdate().skipLocked().execute()
}

export async function markDeliveriesProcessed(db: Db, ids: number[]): Promise<void> {
  if (ids.length === 0) return
  await db
    .updateTable('sync.inbox')
    .set({ status: 'processed', processed_at: sql<Date>`now()`, error: null })
    .where('id', 'in', ids)
    .execute()
}

/**
 * Counts a failed attempt at a delivery: it is taken again after `retryInMs`, or kept as `failed`
 * (with the error) once it has had `maxAttempts`. Returns whether it was given up.
 */
export async function recordDeliveryFailure(
  db: Db,
  id: number,
  error: string,
  options: { maxAttempts: number; retryInMs: (attempts: number) => number },
): Promise<'retry' | 'failed'> {
  // One transaction holding the row: a worker that takes it meanwhile (`skip locked`) cannot apply it
  // between the count and the verdict, and a delivery applied before is left alone.
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('sync.inbox')
      .select('attempts')
      .where('id', '=', id)
      .where('status', '=', 'accepted')
      .forUpdate()
      .executeTakeFirst()
    if (!row) return 'retry' // applied meanwhile by another worker
    const attempts = row.attempts + 1
    const failed = attempts >= options.maxAttempts
    await trx
      .updateTable('sync.inbox')
      .set({
        attempts,
        error,
        ...(failed
          ? { status: 'failed' as const }
          : {
              available_at: sql<Date>`now() + ${options.retryInMs(attempts)}::float8 * interval '1 millisecond'`,
            }),
      })
      .where('id', '=', id)
      .execute()
    return failed ? 'failed' : 'retry'
  })
}

/**
 * When the record's latest delivery arrived, and how long ago (both on PostgreSQL's clock); null when
 * none did.
 */
export async function latestDelivery(
  db: Db,
  model: string,
  recordId: number,
): Promise<{ at: Date; ageMs: number } | null> {
  const result = await sql<{ at: Date | null; age_ms: number | null }>`
    select max(received_at) as at,
      (extract(epoch from clock_timestamp() - max(received_at)) * 1000)::float8 as age_ms
    from sync.inbox where model = ${model} and record_id = ${recordId}
  `.execute(db)
  const row = result.rows[0]
  return row?.at && row.age_ms !== null ? { at: new Date(row.at), ageMs: row.age_ms } : null
}

/** Whether a delivery about a record of `model` arrived after `since` (PostgreSQL's clock). */
export async function deliveredSince(db: Db, model: string, since: Date): Promise<boolean> {
  const row = await db
    .selectFrom('sync.inbox')
    .select('id')
    .where('received_at', '>', since)
    .where('model', '=', model)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Deliveries (accepted, whatever became of them) that arrived in the last `windowMs`. */
export async function countRecentDeliveries(db: Db, windowMs: number): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from sync.inbox
    where received_at > clock_timestamp() - ${windowMs}::float8 * interval '1 millisecond'
      and status <> 'rejected'
  `.execute(db)
  return result.rows[0]?.n ?? 0
}

/**
 * Puts a delivery back in the queue as accepted, its attempts and error cleared: a replay. `parsed`
 * replaces what a rejected delivery was kept with once it reads as a delivery after all. Returns
 * whether the delivery was there.
 */
export async function requeueDelivery(
  db: Db,
  id: number,
  parsed?: Pick<DeliveryRow, 'shape' | 'record_id' | 'payload'>,
): Promise<boolean> {
  const result = await db
    .updateTable('sync.inbox')
    .set({
      ...(parsed ? { ...parsed, body: null } : {}),
      status: 'accepted',
      reason: null,
      attempts: 0,
      available_at: null,
      processed_at: null,
      error: null,
    })
    .where('id', '=', id)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** A rejected delivery rejected again, for `reason` (a replay that still cannot read it). */
export async function rejectAgain(db: Db, id: number, reason: string): Promise<void> {
  await db
    .updateTable('sync.inbox')
    .set({ reason })
    .where('id', '=', id)
    .where('status', '=', 'rejected')
    .execute()
}
