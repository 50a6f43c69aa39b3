// The receiver's group commit: concurrent deliveries share inserts, each caller gets its own row's
// id, and a row the database refuses costs only its own delivery.
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { createInboxWriter } from '../src/receiver/inbox-writer.ts'
import type { DeliveryRow } from '../src/store/inbox.ts'
import { useTestDatabase } from './support/database.ts'

const database = useTestDatabase()

beforeEach(async () => {
  await sql`truncate sync.inbox`.execute(database.db)
})

const delivery = (recordId: number, payload = JSON.stringify({ record_id: recordId })): DeliveryRow => ({
  model: 'person',
  event: 'update',
  shape: 'lean',
  record_id: recordId,
  payload,
  body: null,
  reason: null,
  job_id: null,
})

describe('the inbox writer', () => {
  it("answers each of 300 concurrent deliveries with its own row's id, in far fewer inserts", async () => {
    const write = createInboxWriter(database.db, { concurrency: 2, maxBatch: 50 })
    const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => write(delivery(i + 1))))
    const rows = await database.db.selectFrom('sync.inbox').select(['id', 'record_id', 'status']).execute()
    const byId = new Map(rows.map((row) => [row.id, row]))
    ids.forEach((id, i) => {
      expect(byId.get(id)).toMatchObject({ record_id: i + 1, status: 'accepted' })
    })
    expect(new Set(ids).size).toBe(300)
    // Rows of one insert share its transaction's timestamp: 300 deliveries, at most 50 an insert.
    const { rows: inserts } = await sql<{ n: number }>`
      select count(distinct received_at)::int as n from sync.inbox`.execute(database.db)
    expect(inserts[0]?.n).toBeGreaterThanOrEqual(6)
    expect(inserts[0]?.n).toBeLessThan(100)
  })

  it('fails only the delivery the database refuses; the others of its insert are stored', async () => {
    const write = createInboxWriter(database.db, { concurrency: 1, maxBatch: 10 })
    const results = await Promise.allSettled([
      write(delivery(1)),
      write(delivery(2)),
      write(delivery(3, '{"not json')),
      write(delivery(4)),
    ])
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ])
    const rows = await database.db.selectFrom('sync.inbox').select('record_id').orderBy('id').execute()
    expect(rows.map((row) => row.record_id)).toEqual([1, 2, 4])
  })
})
