// The details pass (src/sync/details/pass.ts) against a fake CRM at the client's edge: each due person's
// historic events and assistants, every page of a long list and no more, the shapes a nested listing
// may plausibly take, a 404, an upstream that ignores `page`, the lease, and progress kept across a
// restart and a failure.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { pickDueDetails, readDetailsProgress } from '../../src/store/record-details.ts'
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

/** The pass's own clock (its window, its pauses), moved by the tests. */
const clock = { at: Date.parse('2026-01-01T00:00:00Z') }

/** A pass whose whole share of a window pays for `records` people (two requests each). */
function pass(db: Db, records = 10) {
  const { client } = crmClient(db)
  const { logger } = capturedLogger()
  const budget = { share: 1, requests: records * 2, windowMs: 10_000 }
  const now = () => clock.at
  return createDetailsPass({ db, crm: client, resource: people, ...budget, logger, leaseSeconds: 60, now })
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

  it('ends a list at the same page a third time in a row (an upstream that ignores page)', async () => {
    const { db } = database
    await write(db, [11])
    const full = range(500, FOLLOW_AT).map(event)
    serve(11, 'historic_events', 1, full)
    serve(11, 'historic_events', 2, full)
    serve(11, 'historic_events', 3, full)
    serve(11, 'assis', 1, [])
    expect(await pollOnce(db)).toMatchObject({ read: 1, requests: 4 })
    expect(await rows(db, 'crm.historic_events', 11)).toEqual(range(500, FOLLOW_AT))
  })

  it('takes 404s on every list as nothing to read until the person changes, and neither deletes nor tombstones', async () => {
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
    serve(21, 'assis', 1, { error: 'not found' }, 404)
    expect(await pollOnce(db)).toEqual({ status: 'polled', read: 1, gone: 1, requests: 2 })
    expect(await rows(db, 'crm.historic_events', 21)).toEqual([600])
    const row = await db
      .selectFrom('crm.people')
      .select('_deleted_at')
      .where('id', '=', 21)
      .executeTakeFirst()
    expect(row?._deleted_at).toBeNull()
    expect(await due(db)).toEqual([])
  })

  it('writes the lists it could read when one answers 404, and ends a list at a 404 past its first page', async () => {
    const { db } = database
    await write(db, [22, 23])
    // Person 22: no assistants route (404); its events are written all the same.
    serve(22, 'historic_events', 1, [event(610)])
    serve(22, 'assis', 1, { error: 'not found' }, 404)
    // Person 23: a full first page, then a 404 where an empty page would be; an empty answer for assis.
    serve(23, 'historic_events', 1, range(620, FOLLOW_AT).map(event))
    serve(23, 'historic_events', 2, { error: 'not found' }, 404)
    serve(23, 'assis', 1, '')
    expect(await pollOnce(db)).toEqual({ status: 'polled', read: 2, gone: 0, requests: 5 })
    expect(await rows(db, 'crm.historic_events', 22)).toEqual([610])
    expect(await rows(db, 'crm.historic_events', 23)).toEqual(range(620, FOLLOW_AT))
    expect(await due(db)).toEqual([])
  })

  it('puts a person whose read fails aside for a while, pauses, and goes on with the others', async () => {
    const { db } = database
    await write(db, [31, 32, 33])
    const first = pass(db, 3)
    // Due in the order of their id (one updated_at): 31, then 32, which fails every time, then 33.
    serve(31, 'historic_events', 1, [event(700)])
    serve(31, 'assis', 1, [])
    serve(32, 'historic_events', 1, { error: 'boom' }, 500).persist()
    expect(await first.pollOnce()).toMatchObject({ status: 'polled', read: 1 })
    nock.cleanAll()
    expect((await readDetailsProgress(db, people)).failing).toBe(1)
    // 32 is not picked before its time; the pass pauses after a failure.
    expect(await due(db)).toEqual([33])
    expect(await first.pollOnce()).toMatchObject({ read: 0, requests: 0 })
    clock.at += 30_000
    // Another replica, once the first let its lease go (a restart), reads only what is due.
    await first.release()
    serve(33, 'historic_events', 1, [])
    serve(33, 'assis', 1, [assistant(330)])
    expect(await pollOnce(db, 5)).toEqual({ status: 'polled', read: 1, gone: 0, requests: 2 })
    expect(nock.isDone()).toBe(true)
    expect(await rows(db, 'crm.assistants', 33)).toEqual([330])
    expect(await rows(db, 'crm.historic_events', 31)).toEqual([700])
  })

  it('reads no more than its share of a window pays for, and looks again a little later when nothing is due', async () => {
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
    // The window has passed: 53 is read, fewer than the share allows, so the pass rests a while.
    clock.at += 10_000
    expect(paced.ownShare()).toBe(0)
    serve(53, 'historic_events', 1, [])
    serve(53, 'assis', 1, [])
    expect(await paced.pollOnce()).toMatchObject({ read: 1, requests: 2 })
    await write(db, [54])
    clock.at += 2_000
    expect(await paced.pollOnce(), 'resting').toMatchObject({ read: 0, requests: 0 })
    serve(54, 'historic_events', 1, [])
    serve(54, 'assis', 1, [])
    clock.at += 3_000
    expect(await paced.pollOnce()).toMatchObject({ read: 1, requests: 2 })
    await paced.release()
  })

  it('reads nothing once halted (a stop)', async () => {
    const { db } = database
    await write(db, [61])
    const halted = pass(db)
    halted.halt()
    expect(await halted.pollOnce()).toEqual({ status: 'polled', read: 0, gone: 0, requests: 0 })
    await halted.release()
    expect(await due(db)).toEqual([61])
    serve(61, 'historic_events', 1, [])
    serve(61, 'assis', 1, [])
    expect(await pollOnce(db)).toMatchObject({ read: 1 })
  })

  it('stands by, reading nothing, while another replica holds its lease', async () => {
    const { db } = database
    await write(db, [71])
    const holder = pass(db)
    expect(await holder.keep()).toBe(true)
    const other = pass(db)
    expect(await other.pollOnce()).toEqual({ status: 'standby', read: 0, gone: 0, requests: 0 })
    await holder.release()
    expect(await other.keep(), 'taken over once let go').toBe(true)
    await other.release()
  })
})
