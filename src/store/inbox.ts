// The webhook inbox (sync.inbox): every delivery that passed the secret check, accepted or rejected.
import type { Insertable, Kysely } from 'kysely'
import type { Db } from './database.ts'
import type { Database, InboxTable } from './schema.ts'

export type DeliveryRow = Omit<Insertable<InboxTable>, 'id' | 'received_at' | 'status' | 'processed_at'>

export async function insertAcceptedDelivery(db: Kysely<Database>, row: DeliveryRow): Promise<number> {
  const { id } = await db
    .insertInto('sync.inbox')
    .values({ ...row, status: 'accepted' })
    .returning('id')
    .executeTakeFirstOrThrow()
  return id
}

export async function insertRejectedDelivery(db: Db, row: DeliveryRow & { reason: string }): Promise<number> {
  const { id } = await db
    .insertInto('sync.inbox')
    .values({ ...row, status: 'rejected' })
    .returning('id')
    .executeTakeFirstOrThrow()
  return id
}

export async function readDelivery(db: Db, id: number) {
  return db.selectFrom('sync.inbox').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function markDeliveryProcessed(db: Kysely<Database>, id: number): Promise<void> {
  await db
    .updateTable('sync.inbox')
    .set({ status: 'processed', processed_at: new Date() })
    .where('id', '=', id)
    .execute()
}
