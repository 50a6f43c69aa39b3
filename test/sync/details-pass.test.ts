// The details pass (src/sync/details/pass.ts) against a fake CRM at the client's edge: each due person's
// historic events and assistants, every page of a long list and no more, the shapes a nested listing
// may plausibly take, a 404, an upstream that ignores `page`, the lease, and progress kept across a
// restart and a failure.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { pickDueDetails } from '../../src/store/record-details.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { createDetailsPass, FOLLOW_AT } from '../../src/sync/details/pass.ts'
import { CRM_URL, capturedLogger, crmClient, useNock, useTestDatabase } from '../api-client/harness.ts'

const database = useTestDatabase()
useNock()

const person = (id: number) => ({ id, name: `P${id}`, updated_at: '2022-12-14T15:53:43.000+01:00' })
const write = (db: Db, ids: number[]) =>
  upsertRecords(db, people, ids.map(person), { source: 'fetch', fetchedAt: new Date() })
const event = (id: number) => ({
  historic_event: { id, unparsed_date: '12.03.', atype: 'birthday', desc: `e${id}` },
})
const assistant = (id: number) => ({ assi: { id, name: `A${id}`, tel: '1', email: `a${id}@example.com` } })
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i)

/** The fake CRM answers a page of a person's list. */
function serve(id: number, route: 'historic_events' | 'assis', page: number, body: unknown, status = 200) {
  return nock(CRM_URL)
    .get(`/api/people/${id}/${route}`)
    .query({ perpage: '250', page: String(page) })
    .reply(status, body)
}

/** A pass whose whole share of a window pays for `records` people (two requests each). */
function pass(db: Db, records = 10) {
  const { client } = crmClient(db)
  const { logger } = capturedLogger()
  const budget = { share: 1, requests: records * 2, windowMs: 10_000 }
  return createDetailsPass({ db, crm: client, resource: people, ...budget, logger, leaseSeconds: 60 })
}

/** One poll of a pass that lets its lease go after it, as a stopped service does. */
async function pollOnce(db: Db, records = 10) {
  const once = pass(db, records)
  try {
    return await once.pollOnce()
  } finally {
    await once.release()
  }
}

const rows = async (db: Db, table: 'crm.historic_events' | 'crm.assistants', id: number) =>
  (
    await db
      .selectFrom(table)
      .select(['id', '_ordinal'])
      .where('_parent_id', '=', id)
      .orderBy('_ordinal')
      .execute()
  ).map((row) => row.id)
const due = async (db: Db) => (await pickDueDetails(db, people, 100)).map((record) => record.id).sort()

describe('the details pass', () => {
  it("reads every page of a person's lists, in the shapes a nested listing may take", async () => {
    const { db } = database
    await write(db, [1, 2])
    // Person 1: 12 events, the upstream giving 10 a page whatever was asked; items wrapped.
    serve(1, 'historic_events', 1, range(100, FOLLOW_AT).map(event))
    serve(1, 'historic_events', 2, range(110, 2).map(event))
    serve(1, 'assis', 1, [assistant(200)])
    // Person 2: bare items, and a list under a key of its own; exactly FOLLOW_AT items, then an empty page.
    serve(2, 'historic_events', 1, { historic_events: [{ id: 300, desc: 'bare' }] })
    serve(
      2,
      'assis',
      1,
      range(400, FOLLOW_AT).map((id) => ({ id, name: 'bare' })),
    )
    serve(2, 'assis', 2, [])
    const result = await pollOnce(db)
    expect(result).toEqual({ status: 'polled', read: 2, gone: 0, requests: 6 })
    expect(await rows(db, 'crm.historic_events', 1)).toEqual(range(100, 12))
    expect(await rows(db, 'crm.assistants', 1)).toEqual([200])
    expect(await rows(db, 'crm.historic_events', 2)).toEqual([300])
    expect(await rows(db, 'crm.assistants', 2)).toEqual(range(400, FOLLOW_AT))
    expect(nock.isDone()).toBe(true)
    expect(await due(db)).toEqual([])
    // Nothing due: no request.
    expect(await pollOnce(db)).toEqual({ status: 'polled', read: 0, gone: 0, requests: 0 })
  })

  it('ends a list at a page that repeats the one before (an upstream that ignores page)', async () => {
    const { db } = database
    await write(db, [11])
    const full = range(500, FOLLOW_AT).map(event)
    serve(11, 'historic_events', 1, full)
    serve(11, 'historic_events', 2, full)
    serve(11, 'assis', 1, [])
    expect(await pollOnce(db)).toMatchObject({ read: 1, requests: 3 })
    expect(await rows(db, 'crm.historic_events', 11)).toEqual(range(500, FOLLOW_AT))
  })

  it('takes a 404 as nothing to read until the person changes, and neither deletes nor tombstones', async () => {
    const { db } = database
    await write(db, [21])
    serve(21, 'historic_events', 1, [event(600)])
    serve(21, 'assis', 1, [])
    await pollOnce(db)
    await upsertRecords(db, people, [{ ...person(21), updated_at: '2022-12-14T15:53:44.000+01:00' }], {
      source: 'fetch',
      fetchedAt: new Date(),
    })
    expect(await due(db)).toEqual([21])
    serve(21, 'historic_events', 1, { error: 'not found' }, 404)
    expect(await pollOnce(db)).toEqual({ status: 'polled', read: 1, gone: 1, requests: 1 })
    expect(await rows(db, 'crm.historic_events', 21)).toEqual([600])
    const row = await db
      .selectFrom('crm.people')
      .select('_deleted_at')
      .where('id', '=', 21)
      .executeTakeFirst()
    expect(row?._deleted_at).toBeNull()
    expect(await due(db)).toEqual([])
  })

  it('keeps what it read when a request fails, and a pass started anew goes on from there', async () => {
    const { db } = database
    await write(db, [31, 32, 33])
    const first = pass(db, 2)
    // Due in the order of their id (one updated_at): 31 and 32 in the first batch; 32 fails.
    serve(31, 'historic_events', 1, [event(700)])
    serve(31, 'assis', 1, [])
    serve(32, 'historic_events', 1, { error: 'boom' }, 500).persist()
    await expect(first.pollOnce()).rejects.toThrow()
    nock.cleanAll()
    expect(await due(db)).toEqual([32, 33])
    // Another replica, once the first let its lease go (a restart), reads only what is due.
    await first.release()
    for (const id of [32, 33]) {
      serve(id, 'historic_events', 1, [])
      serve(id, 'assis', 1, [assistant(id * 10)])
    }
    expect(await pollOnce(db, 5)).toEqual({ status: 'polled', read: 2, gone: 0, requests: 4 })
    expect(nock.isDone()).toBe(true)
    expect(await rows(db, 'crm.assistants', 33)).toEqual([330])
  })

  it('reads no more than its share of a window pays for, and looks again only later when nothing is due', async () => {
    const { db } = database
    await write(db, [51, 52, 53])
    const paced = pass(db, 2)
    for (const id of [51, 52]) {
      serve(id, 'historic_events', 1, [])
      serve(id, 'assis', 1, [])
    }
    expect(await paced.pollOnce()).toMatchObject({ read: 2, requests: 4 })
    expect(paced.ownShare()).toBe(1)
    // The window's share is spent: person 53 waits, and nothing is sent.
    expect(await paced.pollOnce()).toMatchObject({ status: 'polled', read: 0, requests: 0 })
    await paced.release()
    // A fresh window: 53 is read, fewer than the share allows, so the next poll does not look again.
    serve(53, 'historic_events', 1, [])
    serve(53, 'assis', 1, [])
    const fresh = pass(db, 2)
    expect(await fresh.pollOnce()).toMatchObject({ read: 1, requests: 2 })
    await write(db, [54])
    expect(await fresh.pollOnce()).toMatchObject({ read: 0, requests: 0 })
    await fresh.release()
  })

  it('stands by, reading nothing, while another replica holds its lease', async () => {
    const { db } = database
    await write(db, [41])
    const holder = pass(db)
    expect(await holder.keep()).toBe(true)
    const other = pass(db)
    expect(await other.pollOnce()).toEqual({ status: 'standby', read: 0, gone: 0, requests: 0 })
    await holder.release()
    expect(await other.keep(), 'taken over once let go').toBe(true)
    await other.release()
  })
})
