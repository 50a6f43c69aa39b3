// One delivery at a time, for tests that set up the inbox row by row (the engine writes and marks
// deliveries in batches).
import type { Db } from '../../src/store/database.ts'
import type { DeliveryRow } from '../../src/store/inbox.ts'
import { markDeliveriesProcessed } from '../../src/store/inbox.ts'
import { insertAcceptedDeliveries } from '../../src/store/inbox-insert.ts'

export async function insertAcceptedDelivery(db: Db, row: DeliveryRow): Promise<number> {
  const [id] = await insertAcceptedDeliveries(db, [row])
  return id as number
}

export async function markDeliveryProcessed(db: Db, id: number): Promise<void> {
  await markDeliveriesProcessed(db, [id])
}
