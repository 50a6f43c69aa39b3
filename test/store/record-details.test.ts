// What the details pass reads and writes (src/store/record-details.ts): which people's historic events
// and assistants are due and in what order, the rows a read writes (and leaves alone when equal), a
// read older than the one held, and the progress counts.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import {
  type DetailList,
  detailMappings,
  markDetailsFailed,
  pickDueDetails,
  readDetailsProgress,
  writeDetails,
} from '../../src/store/record-details.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { writeResourceState } from '../../src/store/sync-state.ts'
import { useTestDatabase } from '../support/database.ts'

// One database for the file: each test has people of its own.
const database = useTestDatabase()

const stamp = (second: number) => `2022-12-14T15:53:${String(second).padStart(2, '0')}.000+01:00`
const person = (id: number, second: number) => ({ id, name: `P${id}`, updated_at: stamp(second) })
const write = (db: Db, records: Record<string, unknown>[]) =>
  upsertRecords(db, people, records, { source: 'fetch', fetchedAt: new Date() })

const [eventsMapping, assistantsMapping] = detailMappings(people)
const lists = (events: unknown[], assistants: unknown[] = []): DetailList[] => [
  { mapping: eventsMapping as DetailList['mapping'], items: events },
  { mapping: assistantsMapping as DetailList['mapping'], items: assistants },
]
const BIRTHDAY = { id: 501, unparsed_date: '12.03.1984', atype: 'birthday', desc: 'Geburtstag', extra: 1 }
const ASSISTANT = { id: 601, name: 'Erika', tel: '+49 30 1', email: 'erika@example.com' }

/** Reads a person's details as of `readAt`, for the `updated_at` the mirror holds now. */
async function readNow(db: Db, id: number, readAt: Date, events: unknown[] = [], assistants: unknown[] = []) {
  const row = await db.selectFrom('crm.people').select('updated_at').where('id', '=', id).executeTakeFirst()
  return writeDetails(db, people, id, {
    lists: lists(events, assistants),
    readAt,
    readFor: row?.updated_at ?? null,
  })
}

/** A full run of people whose sweep began at `startedAt` and succeeded. */
async function fullRun(db: Db, startedAt: Date) {
  const at = startedAt.toISOString()
  await sql`
    with run as (
      insert into sync.runs (mode, status, requested_by, started_at, finished_at)
      values ('full', 'succeeded', 'test', ${at}::timestamptz, ${at}::timestamptz) returning id
    )
    insert into sync.run_resources (run_id, resource, status, started_at, finished_at)
    select id, 'crm.people', 'succeeded', ${at}::timestamptz, ${at}::timestamptz from run`.execute(db)
}

const dueIds = async (db: Db) =>
  (await pickDueDetails(db, people, 100)).map((due) => `${due.id}:${due.reason}`)

describe('record details', () => {
  it('are due when never read, when the person changed since, and when read before the last full run', async () => {
    const { db } = database
    await write(db, [person(1, 1), person(2, 2), person(3, 3), person(4, 4)])
    await tombstone(db, people, [4])
    // Never read: the newest change first.
    expect(await dueIds(db)).toEqual(['3:new', '2:new', '1:new'])
    const before = new Date('2026-01-01T00:00:00Z')
    for (const id of [1, 2, 3]) await readNow(db, id, before)
    expect(await dueIds(db)).toEqual([])
    // A walk that read every page outside a full run (an incremental one whose count differed) makes
    // nothing due.
    await writeResourceState(db, people.name, { last_full_sync_at: new Date('2026-01-02T00:00:00Z') })
    expect(await dueIds(db)).toEqual([])
    // Person 2 changes; 1 and 3 were read before the last full run of people began.
    await write(db, [person(2, 9)])
    await fullRun(db, new Date('2026-01-02T00:00:00Z'))
    expect(await dueIds(db)).toEqual(['2:changed', '3:stale', '1:stale'])
    await write(db, [person(5, 5)])
    expect(await dueIds(db)).toEqual(['2:changed', '5:new', '3:stale', '1:stale'])
    // Of those read before the last full run, the longest ago first.
    await readNow(db, 3, new Date('2026-01-01T12:00:00Z'))
    await fullRun(db, new Date('2026-01-03T00:00:00Z'))
    expect(await dueIds(db)).toEqual(['2:changed', '5:new', '1:stale', '3:stale'])
    // Of the changed ones, the newest change first.
    await readNow(db, 1, new Date('2026-01-04T00:00:00Z'))
    await write(db, [person(1, 20)])
    expect(await dueIds(db)).toEqual(['1:changed', '2:changed', '5:new', '3:stale'])
    expect(await pickDueDetails(db, people, 2)).toHaveLength(2)
    const progress = await readDetailsProgress(db, people)
    expect(progress).toMatchObject({ records: 4, current: 0, new: 1, changed: 2, stale: 1, failing: 0 })
    expect(progress.lastReadAt).toEqual(new Date('2026-01-04T00:00:00Z'))
  })

  it('are not picked for a while after a read failed, longer with each failure, and current once read', async () => {
    const { db } = database
    await write(db, [person(41, 1)])
    const retryIn = async () =>
      (
        await sql<{ seconds: number }>`
          select extract(epoch from retry_at - now())::float8 as seconds
          from sync.record_details where record_id = 41`.execute(db)
      ).rows[0]?.seconds
    await markDetailsFailed(db, people, 41)
    expect(await retryIn()).toBeCloseTo(30, 0)
    expect((await dueIds(db)).filter((id) => id.startsWith('41:'))).toEqual([])
    expect((await readDetailsProgress(db, people)).failing).toBe(1)
    await markDetailsFailed(db, people, 41)
    expect(await retryIn()).toBeCloseTo(60, 0)
    // Its retry time come, it is due again, as never read.
    await sql`update sync.record_details set retry_at = now() where record_id = 41`.execute(db)
    expect(await dueIds(db)).toContain('41:new')
    await readNow(db, 41, new Date())
    const state = await db
      .selectFrom('sync.record_details')
      .selectAll()
      .where('record_id', '=', 41)
      .executeTakeFirst()
    expect(state).toMatchObject({ failures: 0, retry_at: null })
  })

  it('write the items in order with typed columns, and leave equal rows untouched', async () => {
    const { db } = database
    await write(db, [person(11, 1)])
    const wrapped = { historic_event: { id: 502 } }
    await readNow(db, 11, new Date(), [BIRTHDAY, 'not an object', wrapped], [ASSISTANT])
    const events = await sql<Record<string, unknown>>`
      select _parent_resource, _parent_id, _ordinal, id, unparsed_date, atype, description, _raw
      from crm.historic_events where _parent_id = 11 order by _ordinal`.execute(db)
    expect(events.rows).toEqual([
      {
        _parent_resource: 'crm.people',
        _parent_id: 11,
        _ordinal: 0,
        id: 501,
        unparsed_date: '12.03.1984',
        atype: 'birthday',
        description: 'Geburtstag',
        _raw: BIRTHDAY,
      },
      // Any shape is a row, kept whole.
      { ...nulls(1), _raw: 'not an object' },
      // Unwrapping is the client's: the store keeps what it is given.
      { ...nulls(2), _raw: wrapped },
    ])
    const assistants = await db
      .selectFrom('crm.assistants')
      .selectAll()
      .where('_parent_id', '=', 11)
      .execute()
    expect(assistants).toMatchObject([
      { _parent_id: 11, _ordinal: 0, id: 601, name: 'Erika', email: ASSISTANT.email },
    ])
    const ctids = async () =>
      (
        await sql<{ ctid: string }>`
          select ctid::text from crm.historic_events where _parent_id = 11 order by _ordinal`.execute(db)
      ).rows
    const held = await ctids()
    expect(held).toHaveLength(3)
    await readNow(db, 11, new Date(), [BIRTHDAY, 'not an object', wrapped], [ASSISTANT])
    expect(await ctids(), 'equal items are not written again').toEqual(held)
    // A removed item goes; an empty list leaves no row.
    await readNow(db, 11, new Date(), [BIRTHDAY], [])
    const ids = (table: 'crm.historic_events' | 'crm.assistants') =>
      db.selectFrom(table).select('id').where('_parent_id', '=', 11).execute()
    expect(await ids('crm.historic_events')).toEqual([{ id: 501 }])
    expect(await ids('crm.assistants')).toEqual([])
  })

  it('are not written by a read older than the one held', async () => {
    const { db } = database
    await write(db, [person(21, 1)])
    expect(await readNow(db, 21, new Date('2026-01-02T00:00:00Z'), [BIRTHDAY])).toBe(true)
    expect(await readNow(db, 21, new Date('2026-01-01T00:00:00Z'), [])).toBe(false)
    const rows = await db
      .selectFrom('crm.historic_events')
      .select('id')
      .where('_parent_id', '=', 21)
      .execute()
    expect(rows).toEqual([{ id: 501 }])
  })

  it('hold items that jsonb cannot take as it can', async () => {
    const { db } = database
    await write(db, [person(31, 1)])
    await readNow(db, 31, new Date(), [{ id: 7, desc: 'a\u0000b' }])
    const row = await db
      .selectFrom('crm.historic_events')
      .select(['id', 'description'])
      .where('_parent_id', '=', 31)
      .executeTakeFirst()
    expect(row).toEqual({ id: 7, description: 'a\uFFFDb' })
  })
})

function nulls(ordinal: number) {
  return {
    _parent_resource: 'crm.people',
    _parent_id: 11,
    _ordinal: ordinal,
    id: null,
    unparsed_date: null,
    atype: null,
    description: null,
  }
}
