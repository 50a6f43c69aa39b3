// Deliveries taken from the inbox in batches: what is applied from a payload, what costs a refresh,
// how a burst for one record coalesces, and how a delivery that cannot be applied is retried and
// finally kept as failed without holding back the others.
import { sql } from 'kysely'
import type { PgBoss } from 'pg-boss'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { createInboxDrain, deliveryRetryInMs } from '../../src/sync/delivery/worker.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase, waitForLockWaiter } from '../support/database.ts'
import { insertAcceptedDelivery } from '../support/inbox.ts'

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

const drain = (options: { maxAttempts?: number; fullClaimEveryMs?: number } = {}) =>
  createInboxDrain({ db: database.db, boss, logger, refreshCoalesceSeconds: 5 }, options)

function store(event: string, shape: string, recordId: number, payload: unknown) {
  return insertAcceptedDelivery(database.db, {
    model: 'person',
    event,
    shape,
    record_id: recordId,
    payload: JSON.stringify(payload),
    body: null,
    reason: null,
  })
}

/** Stores one delivery and applies it (alone in its batch). */
async function deliver(event: string, shape: string, recordId: number, payload: unknown) {
  const inboxId = await store(event, shape, recordId, payload)
  expect(await drain().drainOnce()).toBe(1)
  return inboxId
}

const inbox = (id: number) =>
  database.db.selectFrom('sync.inbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

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

describe('deliveries one at a time', () => {
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

  it('fetches instead of applying a payload dated in the future; a later fetch replaces such a row', async () => {
    const future = '2099-01-01T00:00:00.000+01:00'
    await deliver('update', 'api', 9, { person: complete(9, future, 'Pinned') })
    expect(await person(9)).toBeUndefined()
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 9 }])

    // Such a row, written by an earlier version (or a forged payload just within the allowance): a
    // fetch sent well after it was written (a sweep's, ten minutes later) wins, whatever the dates.
    await upsertRecords(database.db, people, [complete(10, future, 'Pinned')], { source: 'payload' })
    await sql`update crm.people set _synced_at = now() - interval '10 minutes' where id = 10`.execute(
      database.db,
    )
    await upsertRecords(database.db, people, [complete(10, T0, 'Truth')], {
      source: 'fetch',
      fetchedAt: new Date(),
    })
    expect(await person(10)).toMatchObject({ name: 'Truth', _source: 'fetch' })
    // A fetch sent right after the payload's row was written does not (the API may lag its webhooks).
    await upsertRecords(database.db, people, [complete(11, future, 'Pinned')], { source: 'payload' })
    await upsertRecords(database.db, people, [complete(11, T0, 'Early')], {
      source: 'fetch',
      fetchedAt: new Date(),
    })
    expect(await person(11)).toMatchObject({ name: 'Pinned' })
  })

  it('falls back to a refresh when the payload cannot be used', async () => {
    await deliver('update', 'api', 9, { person: { ...complete(9, T0), updated_at: 'not a time' } })
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 9 }])
  })

  it('takes a delivery once: a processed one is not taken again', async () => {
    await tombstone(database.db, people, [10])
    await deliver('update', 'lean', 10, { record_id: 10 })
    await sql`delete from pgboss.job where name = 'record-refresh'`.execute(database.db)
    expect(await drain().drainOnce()).toBe(0)
    expect(await queuedRefreshes()).toEqual([])
  })
})

describe('a batch of deliveries', () => {
  it('applies many records in one transaction, one refresh per record however many ask', async () => {
    for (let id = 20; id < 30; id++) await store('update', 'api', id, { person: complete(id, T0) })
    for (let i = 0; i < 5; i++) {
      await store('update', 'lean', 40, { record_id: 40 })
      await store('update', 'flat', 41, { id: 41 })
    }
    expect(await drain().drainOnce()).toBe(20)
    const rows = await database.db
      .selectFrom('crm.people')
      .select('id')
      .where('_source', '=', 'payload')
      .execute()
    expect(rows.map((row) => row.id).sort()).toEqual([20, 21, 22, 23, 24, 25, 26, 27, 28, 29])
    expect(await queuedRefreshes()).toEqual(
      expect.arrayContaining([
        { resource: 'crm.people', id: 40 },
        { resource: 'crm.people', id: 41 },
      ]),
    )
    expect(await queuedRefreshes()).toHaveLength(2)
    const left = await sql<{
      n: number
    }>`select count(*)::int as n from sync.inbox where status <> 'processed'`.execute(database.db)
    expect(left.rows[0]?.n).toBe(0)
  })

  it('keeps the newest payload of a record, and settles two of one second with a refresh', async () => {
    await store('update', 'api', 50, { person: complete(50, LATER, 'newest') })
    await store('update', 'api', 50, { person: complete(50, T0, 'older') })
    await store('update', 'api', 51, { person: complete(51, T0, 'one') })
    await store('update', 'api', 51, { person: complete(51, T0, 'two') })
    expect(await drain().drainOnce()).toBe(4)
    expect((await person(50))?.name).toBe('newest')
    expect((await person(51))?.name).toBe('two')
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 51 }])
  })

  it('settles with a refresh a record another writer created meanwhile in the same second', async () => {
    const other = await database.db.startTransaction().execute()
    try {
      // A refresh (or sweep) writes the new record, not yet committed: the batch sees no row.
      await upsertRecords(other, people, [complete(70, T0, 'fetched')], {
        source: 'fetch',
        fetchedAt: new Date(),
      })
      await store('update', 'api', 70, { person: complete(70, T0, 'payload') })
      const draining = drain().drainOnce()
      await waitForLockWaiter(database.db, 'the batch to wait for the other writer')
      await other.commit().execute()
      expect(await draining).toBe(1)
    } finally {
      if (!other.isCommitted) await other.rollback().execute()
    }
    // The fetched row stays (a payload never replaces a fetch of its second), and a fetch settles it.
    expect((await person(70))?.name).toBe('fetched')
    expect(await queuedRefreshes()).toEqual([{ resource: 'crm.people', id: 70 }])
  })

  it('tombstones a record destroyed in the batch, whatever came before in it', async () => {
    await store('update', 'api', 52, { person: complete(52, T0) })
    await store('destroy', 'lean', 52, { record_id: 52 })
    await store('update', 'api', 53, { person: complete(53, T0) })
    expect(await drain().drainOnce()).toBe(3)
    expect((await person(52))?._deleted_at).toBeInstanceOf(Date)
    expect((await person(53))?._deleted_at).toBeNull()
  })

  it('ignores deliveries of models crm-sync does not mirror', async () => {
    const id = await insertAcceptedDelivery(database.db, {
      model: 'invoice',
      event: 'update',
      shape: 'lean',
      record_id: 1,
      payload: '{}',
      body: null,
      reason: null,
    })
    expect(await drain().drainOnce()).toBe(1)
    expect(await inbox(id)).toMatchObject({ status: 'processed' })
  })
})

describe('a delivery that cannot be applied', () => {
  beforeEach(async () => {
    // The database refuses to write person 666, as a broken row or a full disk would.
    await sql`
      create or replace function test_refuse_666() returns trigger language plpgsql as $$
      begin
        if new.id = 666 then raise exception 'person 666 cannot be written'; end if;
        return new;
      end $$`.execute(database.db)
    await sql`drop trigger if exists refuse_666 on crm.people`.execute(database.db)
    await sql`create trigger refuse_666 before insert or update on crm.people
      for each row execute function test_refuse_666()`.execute(database.db)
  })
  afterAll(async () => {
    await sql`drop trigger if exists refuse_666 on crm.people`.execute(database.db)
  })

  it('holds back no other delivery of its batch, and is retried later with backoff', async () => {
    const good = await store('update', 'api', 60, { person: complete(60, T0) })
    const bad = await store('update', 'api', 666, { person: complete(666, T0) })
    const alsoGood = await store('update', 'api', 61, { person: complete(61, T0) })
    expect(await drain().drainOnce()).toBe(3)
    expect(await inbox(good)).toMatchObject({ status: 'processed' })
    expect(await inbox(alsoGood)).toMatchObject({ status: 'processed' })
    const failed = await inbox(bad)
    expect(failed).toMatchObject({ status: 'accepted', attempts: 1 })
    expect(failed.error).toContain('person 666 cannot be written')
    expect(failed.available_at?.getTime()).toBeGreaterThan(failed.received_at.getTime() + 1_000)
    // Not due yet: nothing to take.
    expect(await drain().drainOnce()).toBe(0)
  })

  it('after a batch that failed, applies that batch one by one, and no delivery it did not take', async () => {
    const worker = drain({ fullClaimEveryMs: 600_000 })
    const replayed = await store('update', 'api', 59, { person: complete(59, T0) })
    expect(await worker.drainOnce()).toBe(1)
    // Replayed: accepted again, below where this worker's claims now start.
    await sql`update sync.inbox set status = 'accepted' where id = ${replayed}`.execute(database.db)
    const bad = await store('update', 'api', 666, { person: complete(666, T0) })
    const good = await store('update', 'api', 61, { person: complete(61, T0) })
    expect(await worker.drainOnce()).toBe(2)
    expect(await inbox(good)).toMatchObject({ status: 'processed' })
    expect(await inbox(bad)).toMatchObject({ status: 'accepted', attempts: 1 })
    expect(await inbox(replayed)).toMatchObject({ status: 'accepted' })
  })

  it('is kept as failed after its last attempt, with its error', async () => {
    const bad = await store('update', 'api', 666, { person: complete(666, T0) })
    // Every claim from the beginning: a retry lies below where the claims start, and a claim from the
    // beginning (one a second) is what takes it once it falls due.
    const worker = drain({ maxAttempts: 2, fullClaimEveryMs: 0 })
    expect(await worker.drainOnce()).toBe(1)
    await sql`update sync.inbox set available_at = null where id = ${bad}`.execute(database.db)
    expect(await worker.drainOnce()).toBe(1)
    expect(await inbox(bad)).toMatchObject({ status: 'failed', attempts: 2 })
    expect(await worker.drainOnce()).toBe(0)
  })

  it('backs off from 2 s, doubling, to at most 5 minutes', () => {
    expect([1, 2, 3, 10, 30].map(deliveryRetryInMs)).toEqual([2_000, 4_000, 8_000, 300_000, 300_000])
  })
})
