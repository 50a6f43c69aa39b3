// How the inbox's pages are kept (migration 0027): room on each page for the processed mark.
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { markDeliveriesProcessed } from '../../src/store/inbox.ts'
import { insertAcceptedDeliveries } from '../../src/store/inbox-insert.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

/** A person's delivery of about 1.6 KB, as the CRM sends it nested, and hardly compressible. */
const delivery = (recordId: number) => ({
  model: 'person',
  event: 'update',
  shape: 'nested',
  record_id: recordId,
  payload: JSON.stringify({
    id: recordId,
    about: Array.from({ length: 45 }, (_, i) => createHash('md5').update(`${recordId}-${i}`).digest('hex')),
  }),
  body: null,
  reason: null,
})

const pages = async () => {
  const { rows } = await sql<{ id: string; page: number }>`
    select id, (ctid::text::point)[0]::int as page from sync.inbox order by id
  `.execute(database.db)
  return rows.map((row) => [Number(row.id), row.page])
}

describe('the inbox', () => {
  it('keeps a delivery marked processed on its page: the WAL then carries only what changed', async () => {
    const ids = await insertAcceptedDeliveries(
      database.db,
      Array.from({ length: 12 }, (_, i) => delivery(i + 1)),
    )
    const written = await pages()
    expect(new Set(written.map(([, page]) => page)).size).toBeGreaterThan(1)
    await markDeliveriesProcessed(database.db, ids)
    expect(await pages()).toEqual(written)
  })
})
