// Replays of every rejected or failed delivery since a time (sync.delivery_replays): asked on the status
// page, worked a batch at a time by the job of src/sync/delivery/replay-all.ts. A replay covers the
// deliveries received from `since` up to its request, whose status is one of `statuses` when their
// batch is taken; `cursor` is the last inbox id handled, so a job taken up again goes on after it.
import { type Selectable, sql } from 'kysely'
import type { Db } from './database.ts'
import type { DeliveryReplaysTable } from './schema.ts'

export type DeliveryReplay = Selectable<DeliveryReplaysTable>
export type ReplayedStatus = DeliveryReplay['statuses'][number]

/** Creates a running replay, with the deliveries it covers counted in the same statement. */
export async function createDeliveryReplay(
  db: Db,
  request: { since: Date; statuses: ReplayedStatus[] },
): Promise<DeliveryReplay> {
  const result = await sql<DeliveryReplay>`
    insert into sync.delivery_replays (since, statuses, total)
    select ${request.since}, ${request.statuses}::text[], count(*)::int
    from sync.inbox
    where status = any(${request.statuses}::text[]) and received_at >= ${request.since}
      and received_at <= now()
    returning *
  `.execute(db)
  return result.rows[0] as DeliveryReplay
}

export async function readDeliveryReplay(db: Db, id: number): Promise<DeliveryReplay | undefined> {
  return db.selectFrom('sync.delivery_replays').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The latest `limit` replays, newest first. */
export async function latestDeliveryReplays(db: Db, limit: number): Promise<DeliveryReplay[]> {
  return db.selectFrom('sync.delivery_replays').selectAll().orderBy('id', 'desc').limit(limit).execute()
}

/** The ids of the replay's next batch: after its cursor, oldest first. */
export async function nextReplayBatch(db: Db, replay: DeliveryReplay, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('sync.inbox')
    .select('id')
    .where('id', '>', replay.cursor)
    .where('status', 'in', replay.statuses)
    .where('received_at', '>=', replay.since)
    .where('received_at', '<=', replay.requested_at)
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map((row) => row.id)
}

/** Records a batch handled: `handled` deliveries more, the last of them `cursor`. */
export async function advanceDeliveryReplay(
  db: Db,
  id: number,
  batch: { handled: number; cursor: number },
): Promise<void> {
  await db
    .updateTable('sync.delivery_replays')
    .set((eb) => ({ done: eb('done', '+', batch.handled), cursor: batch.cursor }))
    .where('id', '=', id)
    .execute()
}

/** Cancels a running replay (its job stops before its next batch); false when none was running. */
export async function cancelDeliveryReplay(db: Db, id: number): Promise<boolean> {
  const result = await db
    .updateTable('sync.delivery_replays')
    .set({ state: 'cancelled', finished_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('state', '=', 'running')
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Marks a running replay finished: no delivery it covers is left after its cursor. */
export async function finishDeliveryReplay(db: Db, id: number): Promise<void> {
  await db
    .updateTable('sync.delivery_replays')
    .set({ state: 'finished', finished_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('state', '=', 'running')
    .execute()
}
