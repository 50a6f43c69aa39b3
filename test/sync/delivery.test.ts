// The delivery handler on its own: what is applied from a payload, what costs a refresh, and how a
// burst for one record coalesces.
import { sql } from 'kysely'
import type { Job, PgBoss } from 'pg-boss'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import { insertAcceptedDelivery } from '../../src/store/inbox.ts'
import { tombstone } from '../../src/store/records.ts'
import { createDeliveryHandler } from '../../src/sync/handlers/delivery.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
let boss: PgBoss

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger)
})
afterAll(async () => {
  await boss?.stop({ graceful: false })
})
beforeEach(async () => {
  await sql`truncate sync.inbox, crm.people, crm.tags`.execute(database.db)
  await sql`delete from pgboss.job where name = 'record-refresh'`.execute(database.db)
})

const T0 = '2022-12-14T15:53:43.000+01:00'
const LATER = '2022-12-14T15:53:44.000+01:00'
const complete = (id: number, updatedAt: string, name = 'Mustermann') => ({
  id,
  name,
  updated_at: updatedAt,
  ...Object.fromEntries(people.includes.map((key) => [key, []])),
})

async function deliver(event: string, shape: string, recordId: number, payload: unknown) {
  const inboxId = await insertAcceptedDelivery(database.db, {
    model: 'person',
    event,
    shape,
    record_id: recordId,
    payload: JSON.stringify(payload),
    body: null,
    reason: null,
    job_id: null,
  })
  const handle = createDeliveryHandler({ db: database.db, boss, logger, refreshCoalesceSeconds: 5 })
  await handle([{ id: `job-${inboxId}`, data: { inbox_id: inboxId } } as Job<unknown>])
  return inboxId
}

/** The queued refreshes' records; each job also carries its delivery's arrival (for the freshness metric). */
async function queuedRefreshes(): Promise<unknown[]> {
  const { rows } = await sql<{ data: { receivedAt?: unknown } }>`
    select data from pgboss.job where name = 'record-refresh' and state = 'created'`.execute(database.db)
  return rows.map(({ data: { receivedAt, ...record } }) => {
    expect(receivedAt).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/)
    return record
  })
}

const person = (id: number) =>
  database.db.selectFrom('crm.people').selectAll().where('id', '=', id).executeTakeFirst()

describe('delivery handler', () => {
  it('applies an api payload that carries every include, without a refresh', async () => {
    const inboxId = await deliver('update', 'api', 1, { person: complete(1, T0) })
    expect(await person(1)).toMatchObject({ name: 'Mustermann', _source: 'payload' })
    expect(await queuedRefreshes()).toEqual([])
    const row = await database.db
      .selectFrom('sync.inbox')
      .selectAll()
      .where('id', '=', inboxId)
      .executeTakeFirst()
    expect(row).toMatchObject({ status: 'processed' })
    expect(row?.processed_at).toBeInstanceOf(Date)
  })

  it('applies a nested payload the same way', async () => {
    await deliver('create', 'nested', 2, { model: 'person', event: 'create', record: complete(2, T0) })
    expect(await person(2)).toMatchObject({ _source: 'payload' })
    expect(await queuedRefreshes()).toEqual([])
  })

  it('refreshes when the payload lacks an include, or is lean or flat', async () => {
    await deliver('update', 'api', 3, { person: { id: 3, name: 'x', updated_at: T0 } })
    await deliver('update', 'lean', 4, { model: 'person', event: 'update', record_id: 4 })
    await deliver('update', 'flat', 5, { id: 5, last_name: 'x' })
    expect(await person(3)).toBeUndefined()
    expect(await queuedRefreshes()).toEqual(
      expect.arrayContaining([
        { resource: 'crm.people', id: 3 },
        { resource: 'crm.people', id: 4 },
        { resource: 'crm.people', id: 5 },
      ]),
    )
  })

  it('refreshes to settle two payloads of the same second', async () => {
    await deliver('update', 'api', 6, { person: complete(6, T0, 'first') })
    expect(await queuedRefreshes()).toEqual([])
    await deliver('update', 'api', 6, { person: complete(6, T0, 'second') })
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 6 }])
    await deliver('update', 'api', 6, { person: complete(6, LATER, 'third') })
    expect(await queuedRefreshes()).toHaveLength(1)
    expect((await person(6))?.name).toBe('third')
  })

  it('coalesces a burst of lean deliveries for one record into one queued refresh', async () => {
    for (let i = 0; i < 20; i++)
      await deliver('update', 'lean', 7, { model: 'person', event: 'update', record_id: 7 })
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 7 }])
  })

  it('tombstones on destroy; a stale payload arriving later cannot bring the record back', async () => {
    await deliver('create', 'api', 8, { person: complete(8, T0) })
    await deliver('destroy', 'lean', 8, { model: 'person', event: 'destroy', record_id: 8 })
    expect((await person(8))?._deleted_at).toBeInstanceOf(Date)
    await deliver('update', 'api', 8, { person: complete(8, LATER, 'zombie') })
    expect(await person(8)).toMatchObject({ name: 'Mustermann' })
    expect((await person(8))?._deleted_at).toBeInstanceOf(Date)
  })

  it('falls back to a refresh when the payload cannot be used', async () => {
    await deliver('update', 'api', 9, { person: { ...complete(9, T0), updated_at: 'not a time' } })
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 9 }])
  })

  it('skips a delivery processed before (a retried job) and drops a job it cannot read', async () => {
    await tombstone(database.db, people, [10])
    const inboxId = await deliver('update', 'lean', 10, { record_id: 10 })
    const handle = createDeliveryHandler({ db: database.db, boss, logger, refreshCoalesceSeconds: 5 })
    await sql`delete from pgboss.job where name = 'record-refresh'`.execute(database.db)
    await handle([{ id: 'again', data: { inbox_id: inboxId } } as Job<unknown>])
    await handle([{ id: 'garbage', data: { inbox: 'x' } } as Job<unknown>])
    expect(await queuedRefreshes()).toEqual([])
  })
})
