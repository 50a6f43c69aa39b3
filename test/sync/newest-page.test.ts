// The newest-page polls of reservation contacts and bookings: one request a poll while nothing changes
// and no write; a change reaches the mirror at the next poll; more changes than the page limit start an
// incremental run of the resource; one replica polls at a time; and a poll yields while its service's
// budget is needed by other work.
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createUpstreamClients, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { users } from '../../src/resources/crm.ts'
import { bookings, contacts } from '../../src/resources/index.ts'
import { freeBudgetShare, pauseBudget, prepareBudget, takeBudgetSlot } from '../../src/store/budget.ts'
import { newerThanMirror } from '../../src/store/records.ts'
import { createRun } from '../../src/store/runs.ts'
import { inFirstSync, writeResourceState } from '../../src/store/sync-state.ts'
import { createNewestPagePoll, type NewestPageResult } from '../../src/sync/feed/newest-page.ts'
import { startPolling } from '../../src/sync/feed/poll-loop.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { logger, sandboxConfig } from './support.ts'

describe('newerThanMirror', () => {
  const at = (time: string) => new Date(`2026-11-27T10:00:${time}Z`)
  const record = { id: 1, updated_at: '2026-11-27T10:00:05Z' }
  it.each([
    ['no row', undefined, true],
    ['a tombstone', { updatedAt: at('05'), deleted: true, fetchedAt: at('09') }, true],
    ['an older version', { updatedAt: at('04'), deleted: false, fetchedAt: at('09') }, true],
    ['a newer version', { updatedAt: at('06'), deleted: false, fetchedAt: at('09') }, false],
    ['the same, read in its second', { updatedAt: at('05'), deleted: false, fetchedAt: at('05.500') }, true],
    ['the same, read after its second', { updatedAt: at('05'), deleted: false, fetchedAt: at('06') }, false],
    ['the same, from a payload', { updatedAt: at('05'), deleted: false, fetchedAt: null }, true],
  ])('against %s: %s', (_name, state, newer) => {
    expect(newerThanMirror(record, state)).toBe(newer)
  })
})

describe('a newest-page poll', () => {
  let upstream: Sandbox | undefined
  let database: TestDatabase | undefined
  afterEach(async () => {
    await upstream?.stop()
    if (database) await dropTestDatabase(database)
  })

  // Ties in one order (by id): under a new order on every request, two pages of one burst can miss
  // records of it, which the sweeps find (walks under unstable ties: docs/how-sync-works.md).
  async function setUp(seedSize = { bookings: 40 }) {
    upstream = await startSandbox({
      seedSize: { contacts: 20, ...seedSize },
      behaviour: { reservationRateLimit: null, tieOrder: 'by-id' },
    })
    database = await createTestDatabase()
    const { db } = database
    const clients = createUpstreamClients(sandboxConfig(upstream), {
      db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    const gaps: string[][] = []
    const poll = (maxPages?: number) =>
      createNewestPagePoll({
        db,
        reader: clients.reservation ?? expect.fail('reservation configured'),
        resource: bookings,
        logger,
        maxPages,
        onGap: async (resources) => {
          gaps.push([...resources])
        },
      })
    return { db, control: upstream.control.reservation, poll, gaps }
  }

  /**
   * Polls until a poll writes nothing (within 5 s: a record read within its second is written again
   * until that second has passed); each costs one request.
   */
  async function idle(poll: { pollOnce(): Promise<NewestPageResult> }) {
    const polls: NewestPageResult[] = []
    await waitFor(
      async () => {
        polls.push(await poll.pollOnce())
        return polls.at(-1)?.written === 0 ? true : undefined
      },
      5000,
      'a poll that writes nothing',
    )
    for (const result of polls) expect(result).toMatchObject({ requests: 1, gap: false })
  }

  const mirrored = async (db: TestDatabase['db'], id: number) =>
    (
      await sql<{ status: string | null }>`select status from reservations.bookings where id = ${id}`.execute(
        db,
      )
    ).rows[0]?.status

  it('costs one request and no write while nothing changes, and brings a change at the next poll', async () => {
    const { db, control, poll } = await setUp()
    const bookingsPoll = poll()
    // The first poll sets the floor from page 1 and writes it.
    expect(await bookingsPoll.pollOnce()).toMatchObject({ status: 'polled', requests: 1, written: 40 })
    // Records read in the second they changed are read again (a change later in that second looks
    // the same), until a poll reads them after it: then one request a poll and no write.
    await idle(bookingsPoll)
    const id = control.liveIds('bookings')[7] as number
    control.update('bookings', id, { status: 'declined' })
    expect(await bookingsPoll.pollOnce()).toMatchObject({ requests: 1, written: 1, gap: false })
    expect(await mirrored(db, id)).toBe('declined')
    await idle(bookingsPoll)
  })

  it('starts an incremental run of the resource past its page limit', async () => {
    const { db, control, poll, gaps } = await setUp({ bookings: 600 })
    const onePage = poll(1)
    await onePage.pollOnce()
    // More changes than a page of 250 since the last poll.
    const ids = control.liveIds('bookings').slice(0, 300)
    for (const [i, id] of ids.entries()) control.update('bookings', id, { note: `Umbuchung ${i}` })
    expect(await onePage.pollOnce()).toMatchObject({ requests: 1, written: 250, gap: true })
    expect(gaps).toEqual([[bookings.name]])
    // The gap is handed over once: the next poll finds page 1 in the mirror (or, within the second the
    // changes were read in, reads on past them to the floor), and hands over nothing.
    await onePage.release()
    expect(await poll().pollOnce()).toMatchObject({ status: 'polled', gap: false })
    expect(gaps).toHaveLength(1)
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from reservations.bookings where note like 'Umbuchung %'
    `.execute(db)
    expect(rows[0]?.n).toBeGreaterThanOrEqual(250)
  })

  it('runs on one replica at a time', async () => {
    const { poll } = await setUp()
    const [one, other] = [poll(), poll()]
    expect(await one.pollOnce()).toMatchObject({ status: 'polled' })
    expect(await other.pollOnce()).toMatchObject({ status: 'standby', requests: 0 })
    await one.release()
    expect(await other.pollOnce()).toMatchObject({ status: 'polled' })
  })
})

describe('a poll loop', () => {
  const database = useTestDatabase()

  it('yields while less than a fifth of its budget is free', async () => {
    const { db } = database
    await prepareBudget(db, 'reservation', 10)
    expect(await freeBudgetShare(db, 'reservation')).toBe(1)
    for (let i = 0; i < 9; i++) await takeBudgetSlot(db, 'reservation', { holdMs: 60_000, at: null })
    expect(await freeBudgetShare(db, 'reservation')).toBeCloseTo(0.1)
    await pauseBudget(db, 'reservation', { ms: 60_000, at: null })
    expect(await freeBudgetShare(db, 'reservation')).toBe(0)

    let polls = 0
    let yielded = 0
    const loop = startPolling(
      {
        owner: 'test',
        pollOnce: async () => {
          polls++
          return { status: 'polled' as const }
        },
        keep: async () => true,
        release: async () => {},
      },
      {
        name: 'test poll',
        pollSeconds: 3600,
        logger,
        yields: async () => (await freeBudgetShare(db, 'reservation')) < 0.2,
        onYielded: () => yielded++,
      },
    )
    await waitFor(async () => (yielded > 0 ? true : undefined), 5000, 'the loop to yield').finally(() =>
      loop.stop(),
    )
    expect({ polls, yielded }).toEqual({ polls: 0, yielded: 1 })
  })
})

describe('a poll in the first sync', () => {
  const database = useTestDatabase()

  it('waits while a resource it covers has a sweep under way and none finished', async () => {
    const { db } = database
    const names = [bookings.name, contacts.name]
    expect(await inFirstSync(db, names)).toBe(false)
    await createRun(db, { mode: 'full', resources: [bookings.name], requestedBy: 'test' }, async () => {})
    expect(await inFirstSync(db, names)).toBe(true)
    expect(await inFirstSync(db, [contacts.name])).toBe(false)
    // Swept once: what the sweep under way reads is a later sync's, and the poll goes on.
    await writeResourceState(db, bookings.name, { watermark: new Date() })
    expect(await inFirstSync(db, names)).toBe(false)
  })

  it('knows a resource without updated_at (no watermark ever) swept once by its time of success', async () => {
    const { db } = database
    await createRun(db, { mode: 'incremental', resources: [users.name], requestedBy: 'test' }, async () => {})
    expect(await inFirstSync(db, [users.name])).toBe(true)
    await writeResourceState(db, users.name, { last_incremental_sync_at: new Date() })
    expect(await inFirstSync(db, [users.name])).toBe(false)
  })
})

describe('a contacts poll', () => {
  it('writes a contact created since the last poll', async () => {
    const upstream = await startSandbox({
      seedSize: { contacts: 5 },
      behaviour: { reservationRateLimit: null },
    })
    const own = await createTestDatabase()
    try {
      const clients = createUpstreamClients(sandboxConfig(upstream), {
        db: own.db,
        logger,
        metrics: createUpstreamMetrics(),
      })
      const contactsPoll = createNewestPagePoll({
        db: own.db,
        reader: clients.reservation ?? expect.fail('reservation configured'),
        resource: contacts,
        logger,
      })
      await contactsPoll.pollOnce()
      const made = upstream.control.reservation.create('contacts', { last: 'Neu' })
      expect(await contactsPoll.pollOnce()).toMatchObject({ written: 1 })
      const { rows } = await sql<{ last: string }>`
        select last from reservations.contacts where id = ${made.id}
      `.execute(own.db)
      expect(rows).toEqual([{ last: 'Neu' }])
    } finally {
      await upstream.stop()
      await dropTestDatabase(own)
    }
  })
})
