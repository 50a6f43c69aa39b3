// The webhook inbox (sync.inbox): every delivery that passed the secret check, accepted or rejected.
// Accepted deliveries are also the queue of work: the receiver's insert is all it needs to commit
// before answering (inbox-insert.ts), and workers take them oldest first (`for update skip locked`,
// so replicas share).
import { type Insertable, type Kysely, type Selectable, sql } from 'kysely'
import type { Db } from './database.ts'
import type { Database, InboxTable } from './schema.ts'

export type DeliveryRow = Omit<
  Insertable<InboxTable>,
  'id' | 'received_at' | 'status' | 'processed_at' | 'attempts' | 'available_at' | 'error'
>

export type InboxRow = Selectable<InboxTable>

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
