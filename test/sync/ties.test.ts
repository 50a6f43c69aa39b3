// Walks against an upstream that orders ties anew on every request (the sandbox's default `tieOrder`),
// with groups of records sharing one `updated_at` larger than a page. First the decisions of ties.ts
// on their own, then the engine as `npm start` runs it: a first sync, and incremental runs after mass
// edits that put a group larger than a page into one second, for both services, under API faults.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import type { RecordPage, UpstreamClients } from '../../src/api-client/index.ts'
import { people } from '../../src/resources/index.ts'
import { readRun } from '../../src/store/runs.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { agreement, learnt, readsAgain, tieOrders } from '../../src/sync/sweep/tie-order.ts'
import {
  boundsIn,
  pagesCovering,
  resumeTies,
  roundPages,
  savedTies,
  type TieTracker,
  trackTies,
  windowFor,
} from '../../src/sync/sweep/ties.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { requestRun, runEnded } from '../support/runs.ts'
import { differences } from '../support/truth.ts'
import { mirrorOf, pagesOneAtATime, sandboxConfig, startTestRun, sweepDeps, truthOf } from './support.ts'

const page = (times: number[], firstId: number) => times.map((time, i) => ({ time, id: firstId + i }))

describe('tie groups at page boundaries', () => {
  it.each([
    {
      why: 'a group across a boundary that showed each of its records',
      pages: [page([9, 8, 7, 7], 1), page([7, 7, 6, 5], 5)],
      partial: [],
    },
    {
      why: 'a group across a boundary that showed a record twice and one not at all',
      pages: [page([9, 8, 7, 7], 1), [...page([7], 4), ...page([7, 6, 5], 10)]],
      partial: [{ time: 7, startPage: 1, startIndex: 2, endPage: 2, positions: 4, pageSize: 4 }],
    },
    {
      why: 'a group within one page, whatever repeats (one answer is one order)',
      pages: [[...page([9], 1), ...page([7], 2), ...page([7], 2), ...page([5], 3)], page([4, 3, 2, 1], 9)],
      partial: [],
    },
    {
      why: 'a group over three pages, missing one record',
      pages: [page([9, 9, 7, 7], 1), page([7, 7, 7, 7], 5), [...page([7], 5), ...page([4, 3, 2], 20)]],
      partial: [{ time: 7, startPage: 1, startIndex: 2, endPage: 3, positions: 7, pageSize: 4 }],
    },
    {
      why: 'records without a time (an unordered walk, a bad record): no group',
      pages: [page([9, Number.NaN, Number.NaN, Number.NaN], 1), page([Number.NaN, Number.NaN, 3, 2], 5)],
      partial: [],
    },
  ])('$why', ({ pages, partial }) => {
    const tracker: TieTracker = { open: null }
    const found = pages.flatMap((records, i) => trackTies(tracker, i + 1, 4, records))
    expect(found.map(({ ids: _, ...group }) => group)).toEqual(partial)
  })

  it.each([
    // positions 240..259 (a group of 18 with a neighbour each side): pages of 249 to 241 have a
    // boundary inside (249 and 258, ...); one of 240 from 240 holds it
    { first: 240, last: 259, max: 250, walk: 250, window: { page: 2, perPage: 240 } },
    // 248..252 straddle 250 (the walk's boundary); a page of 248 from 248 holds them
    { first: 248, last: 252, max: 250, walk: 250, window: { page: 2, perPage: 248 } },
    // the walk's own page is never asked again: only a page size that holds them both
    { first: 0, last: 99, max: 100, walk: 0, window: { page: 1, perPage: 100 } },
    { first: 0, last: 99, max: 100, walk: 100, window: null },
    // larger than any page the upstream serves
    { first: 200, last: 320, max: 100, walk: 100, window: null },
  ])(
    'a window for positions $first to $last, pages up to $max, the walk in pages of $walk',
    ({ first, last, max, walk, window }) => {
      expect(windowFor(first, last, max, walk)).toEqual(window)
    },
  )

  it('travel in the checkpoint, or point it back to their first page when too large to carry', () => {
    const at = { phase: 'walk' as const, nextPage: 7, watermark: null }
    const small: TieTracker = { open: null }
    trackTies(small, 6, 3, page([9, 8, 8], 1))
    const saved = savedTies(small, at)
    expect(saved).toMatchObject({
      nextPage: 7,
      tie: { time: 8, startPage: 6, positions: 2, ids: [2, 3], pageSize: 3 },
    })
    // A resumed walk goes on counting it: one more record of it, then the group ends.
    const resumed = resumeTies(JSON.parse(JSON.stringify(saved)).tie)
    expect(trackTies(resumed, 7, 3, [...page([8], 2), ...page([5], 9)])).toMatchObject([
      { positions: 3, pageSize: 3 },
    ])
    const large: TieTracker = { open: null }
    trackTies(large, 3, 1001, page(Array(1001).fill(4), 1))
    expect(savedTies(large, at)).toEqual({ ...at, nextPage: 3, tie: undefined })
  })

  it('point the checkpoint back to where a group began until it has been read again', () => {
    const at = { phase: 'walk' as const, nextPage: 7, watermark: null }
    const tracker: TieTracker = { open: null }
    trackTies(tracker, 5, 3, page([9, 8, 8], 1))
    const unread = trackTies(tracker, 6, 3, [...page([8], 2), ...page([7, 7], 20)])
    expect(unread).toMatchObject([{ time: 8, startPage: 5 }])
    // The group the page ends in (7, 7) is read again from page 5 too: it is not carried.
    expect(savedTies(tracker, at, unread)).toEqual({ ...at, nextPage: 5, tie: undefined })
    expect(savedTies(tracker, at)).toMatchObject({ nextPage: 7, tie: { time: 7, startPage: 6 } })
  })

  it('reads a group larger than a page on pages around it, or on one inside it, a new size each round', () => {
    // Positions 1000-1299 and a neighbour each side: pages of 249 hold 245 and 55 of them. Pages of
    // 250 would hold 250 and 50, but on three pages (the neighbour at 999 ends page 4).
    expect(roundPages(999, 1300, 1000, 1299, 250, new Set())).toEqual([
      { page: 5, perPage: 249 },
      { page: 6, perPage: 249 },
    ])
    const next = roundPages(999, 1300, 1000, 1299, 250, new Set(['5x249,6x249']))
    expect(next).toHaveLength(2)
    expect(next[0]?.perPage).not.toBe(249)
    // Without the neighbours: one page over most of the group, one not asked for before.
    expect(roundPages(999, 1300, 1000, 1299, 250, new Set(), false)).toEqual([{ page: 5, perPage: 250 }])
    expect(roundPages(999, 1300, 1000, 1299, 250, new Set(['5x250']), false)).toEqual([
      { page: 5, perPage: 249 },
    ])
    // Positions 16-315: the first page of 250 holds 234 of them.
    expect(roundPages(15, 316, 16, 315, 250, new Set(), false)).toEqual([{ page: 1, perPage: 250 }])
  })

  it.each([
    {
      why: 'both bounds inside a page',
      asked: [{ page: 2, perPage: 5 }],
      times: [[9, 7, 7, 7, 5]],
      size: 5,
      bounds: { start: 6, end: 8 },
    },
    {
      why: 'the start of the index, the group past the page',
      asked: [{ page: 1, perPage: 4 }],
      times: [[7, 7, 7, 7]],
      size: 4,
      bounds: { start: 0, end: null },
    },
    {
      why: 'the end of the index (a short page)',
      asked: [{ page: 3, perPage: 4 }],
      times: [[7, 7]],
      size: 2,
      bounds: { start: null, end: 9 },
    },
    {
      why: 'across two pages',
      asked: [
        { page: 1, perPage: 3 },
        { page: 2, perPage: 3 },
      ],
      times: [
        [9, 7, 7],
        [7, 5, 4],
      ],
      size: 3,
      bounds: { start: 1, end: 3 },
    },
  ])('where a group stands now: $why', ({ asked, times, size, bounds }) => {
    const answers = times.map((records) => ({ size, records }))
    expect(boundsIn(asked, answers, (time) => time === 7)).toEqual(bounds)
  })

  it('pages around a group too large for one', () => {
    expect(pagesCovering(200, 320, 100)).toEqual([
      { page: 3, perPage: 100 },
      { page: 4, perPage: 100 },
    ])
    expect(pagesCovering(199, 320, 99)).toEqual([
      { page: 3, perPage: 99 },
      { page: 4, perPage: 99 },
    ])
  })
})

const rig = useEngineRig()

/** `count` records of a collection changed within one second: a mass edit. */
/** The mirror's people are the sandbox's, field for field. */
async function expectPeopleMirrored(db: TestDatabase['db'], sandbox: Sandbox) {
  const truth = sandbox.control.crm
    .liveIds('people')
    .map((id) => sandbox.control.crm.get('people', id) as { id: number })
  expect(await mirrorOf(db, people)).toEqual(truthOf(truth, people))
}

function massEdit(upstream: Sandbox, count: number) {
  const { crm, reservation } = upstream.control
  const edited = { people: 0, bookings: 0, contacts: 0 }
  for (const id of crm.liveIds('people').slice(0, count)) {
    crm.update('people', id, { background: 'mass edit' })
    edited.people++
  }
  for (const collection of ['bookings', 'contacts'] as const) {
    for (const id of reservation.liveIds(collection).slice(0, count)) {
      reservation.update(collection, id, { note: 'mass edit' })
      edited[collection]++
    }
  }
  return edited
}

describe('walks under ties in a new order on every request', () => {
  it('bring every record of groups larger than a page, in the first sync and after mass edits', async () => {
    const upstream = await startSandbox({
      seedSize: { people: 600, companies: 40, tasks: 300, contacts: 500, bookings: 600 },
      seedTies: 140,
      seed: 5,
      behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: 100 },
      faults: { crm: { errorRate: 0.03, throttleRate: 0.02 }, reservation: { errorRate: 0.03 } },
    })
    expect(upstream.control.behaviour().tieOrder).toBe('shuffled')
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    // Incremental runs are slots aligned on the clock: a day's makes the one at start the only one, so
    // that no later walk can make up for what one walk missed.
    rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: '86400',
        CRM_RATE_LIMIT: '1000',
        RESERVATION_RATE_LIMIT: '1000',
      }),
    )
    const left = () => differences(database.db, upstream, { reservation: true, limit: 5 })
    const first = await runEnded(database.db, 1, 90_000)
    expect(first.status).toBe('succeeded')
    expect(await left()).toEqual([])
    // Silent for the reservation service always, and for the CRM here: only the sweeps can tell.
    upstream.control.setFaults({ deliveries: { dropRate: 1 } })
    const edited = massEdit(upstream, 250)
    expect(edited).toEqual({ people: 250, bookings: 250, contacts: 250 })
    const run = await requestRun(database.db, database.url, { mode: 'incremental' }, 90_000)
    expect(run.status).toBe('succeeded')
    expect(await left()).toEqual([])
  }, 200_000)
})

describe('walks under ties in a new order on every request, groups of several pages', () => {
  // An account of 200,000 has bulk-edit groups of some 900 records: more than three pages of 250. The
  // last of such a group's records show slowest when it is read again, a page at a time.
  it('bring every record of a group of 861 in pages of 250 in the first sync', async () => {
    const upstream = await startSandbox({
      seedSize: { people: 2000, contacts: 2000 },
      seedTies: 861,
      seed: 7,
      behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: 250 },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: '86400',
        CRM_RATE_LIMIT: '1000',
        RESERVATION_RATE_LIMIT: '1000',
      }),
    )
    const first = await runEnded(database.db, 1, 120_000)
    expect(first.status).toBe('succeeded')
    expect(await differences(database.db, upstream, { reservation: true, limit: 5 })).toEqual([])
  }, 200_000)
})

describe('a walk stopped while it reads a group of ties again', () => {
  /**
   * Clients whose people index shows the first record of a page that goes on a group from the page
   * before as a repeat of that page's last record (an upstream without a tie-breaker may answer so),
   * once; the group's reading again then fails as a lost database connection would.
   */
  function hidingOnce() {
    const seen: { hidden?: { page: number; id: unknown }; stopped: boolean } = { stopped: false }
    const wrap = (wrapped: UpstreamClients): UpstreamClients => {
      const clients = pagesOneAtATime(wrapped)
      let before: RecordPage | undefined
      return {
        ...clients,
        crm: {
          ...clients.crm,
          async index(resource, query) {
            const again = query?.perPage !== undefined
            if (resource === people && again && seen.hidden && !seen.stopped) {
              seen.stopped = true
              throw Object.assign(new Error('connection reset while reading a group again'), {
                code: 'ECONNRESET',
              })
            }
            const answer = await clients.crm.index(resource, query)
            if (resource !== people || again) return answer
            const [first] = answer.records
            const last = before?.records.at(-1)
            before = answer
            if (seen.hidden || !first || !last || first.updated_at !== last.updated_at) return answer
            seen.hidden = { page: answer.page, id: first.id }
            return { ...answer, records: [last, ...answer.records.slice(1)] }
          },
        },
      }
    }
    return { seen, wrap }
  }

  it('resumes where the group began, and the record it hid arrives', async () => {
    // 200 people in pages of 20 and a group of 30 with one updated_at: it straddles a boundary.
    const sandbox = await startSandbox({
      seedSize: { people: 200 },
      seedTies: 30,
      seed: 3,
      behaviour: { crmRateLimit: null, maxPerpage: 20, tieOrder: 'by-id' },
    })
    const database = await createTestDatabase()
    try {
      const config = sandboxConfig(sandbox)
      const { seen, wrap } = hidingOnce()
      const { result, jobs } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
      if (result.status !== 'started') throw new Error('not started')
      const job = { id: 'job-1', data: jobs[0], signal: new AbortController().signal }
      const first = createSweepHandler(sweepDeps(database.db, config, { wrap }))([job])
      await expect(first).rejects.toThrow('connection reset')
      const hidden = seen.hidden
      if (!hidden) throw new Error('no group straddled a page boundary')
      const checkpoint = await sql<{ checkpoint: { nextPage?: number } | null }>`
        select checkpoint from sync.run_resources where run_id = ${result.runId}
      `.execute(database.db)
      // The page that hid the record is not covered: the group began on a page before it.
      expect(checkpoint.rows[0]?.checkpoint?.nextPage).toBeLessThan(hidden.page)

      await createSweepHandler(sweepDeps(database.db, config))([{ ...job, id: 'job-2' }])
      expect((await readRun(database.db, result.runId))?.status).toBe('succeeded')
      await expectPeopleMirrored(database.db, sandbox)
    } finally {
      await sandbox.stop()
      await dropTestDatabase(database)
    }
  })
})

describe('what reading tie groups again teaches of the upstream', () => {
  // Records as [id, time] in page order.
  const seen = (records: [number, number][]) => records.map(([id, time]) => ({ id, time }))
  it.each([
    {
      why: 'one group of three in the same order',
      walk: seen([
        [1, 9],
        [2, 9],
        [3, 9],
      ]),
      again: seen([
        [1, 9],
        [2, 9],
        [3, 9],
      ]),
      bits: Math.log2(6),
    },
    {
      why: 'every group both showed, each over the records both showed',
      walk: seen([
        [7, 9],
        [1, 9],
        [2, 9],
        [3, 9],
        [4, 8],
        [5, 8],
      ]),
      again: seen([
        [1, 9],
        [9, 9],
        [2, 9],
        [3, 9],
        [4, 8],
        [5, 8],
        [6, 8],
      ]),
      bits: Math.log2(6) + 1,
    },
    {
      why: 'a record that changed in between left its group',
      walk: seen([
        [1, 9],
        [2, 9],
        [3, 9],
      ]),
      again: seen([
        [2, 12],
        [1, 9],
        [3, 9],
      ]),
      bits: 1,
    },
    {
      why: 'two of one group in another order',
      walk: seen([
        [1, 9],
        [2, 9],
        [3, 8],
        [4, 8],
      ]),
      again: seen([
        [1, 9],
        [2, 9],
        [4, 8],
        [3, 8],
      ]),
      bits: null,
    },
    {
      why: 'a record the walk had not seen in the group read again',
      walk: seen([
        [1, 9],
        [2, 9],
      ]),
      again: seen([
        [1, 9],
        [2, 9],
        [3, 9],
      ]),
      hidden: 1,
      bits: null,
    },
    {
      why: 'one record a group: no evidence',
      walk: seen([
        [1, 9],
        [2, 8],
      ]),
      again: seen([
        [1, 9],
        [2, 8],
      ]),
      bits: 0,
    },
  ])('$why', ({ walk, again, hidden = 0, bits }) => {
    const found = agreement(walk, again, hidden)
    if (bits === null) expect(found).toBeNull()
    else expect(found).toBeCloseTo(bits)
  })

  it('reads every group again until the order is trusted, then every eighth, and all again after a disagreement', () => {
    let evidence = { bits: 0, skipped: 0 }
    expect(readsAgain(evidence)).toBe(true)
    // Twelve records in one order twice: 28.8 bits, short of 30; three more pass it.
    const twelve = [...Array(12).keys()].map((id) => ({ id, time: 5 }))
    evidence = learnt(evidence, { bits: agreement(twelve, twelve, 0) })
    expect(readsAgain(evidence)).toBe(true)
    evidence = learnt(evidence, { bits: agreement(twelve.slice(0, 3), twelve.slice(0, 3), 0) })
    const reads: boolean[] = []
    for (let i = 0; i < 16; i++) {
      const read = readsAgain(evidence)
      reads.push(read)
      evidence = read ? learnt(evidence, { bits: 0 }) : learnt(evidence, 'skipped')
    }
    expect(reads.filter(Boolean)).toHaveLength(2)
    expect(reads.indexOf(true)).toBe(7)
    evidence = learnt(evidence, { bits: agreement(twelve.slice(0, 2), twelve.slice(0, 2).reverse(), 0) })
    expect(evidence).toEqual({ bits: 0, skipped: 0 })
    expect(readsAgain(evidence)).toBe(true)
  })
})

describe('walks where every page is shifted by a change, ties in one order or anew', () => {
  /**
   * Clients before whose every people page after the first the oldest person changes: it jumps to
   * the front of `updated_at-desc`, every later page shifts by one, and the walk sees the last record
   * of a page again at the start of the next, inside a group of ties too. Counts the requests that read
   * a group again (the only ones that name a page size).
   */
  function shifting(sandbox: Sandbox) {
    const counted = { again: 0 }
    const wrap = (wrapped: UpstreamClients): UpstreamClients => {
      const clients = pagesOneAtATime(wrapped)
      return {
        ...clients,
        crm: {
          ...clients.crm,
          async index(resource, query) {
            if (resource === people && query?.perPage !== undefined) counted.again++
            // Not past the last page: a record the walk had seen, changed after, is the next run's.
            else if (resource === people && (query?.page ?? 1) > 1 && (query?.page ?? 1) <= 10) {
              const { crm } = sandbox.control
              const [oldest] = crm
                .liveIds('people')
                .map((id) => crm.get('people', id) as { id: number; updated_at: string })
                .sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at) || a.id - b.id)
              if (oldest) crm.update('people', oldest.id, { background: `shifted ${query?.page}` })
            }
            return clients.crm.index(resource, query)
          },
        },
      }
    }
    return { counted, wrap }
  }

  it.each([
    { tieOrder: 'by-id' as const, again: 'one in eight' },
    { tieOrder: 'shuffled' as const, again: 'every one' },
  ])(
    'ties $tieOrder: the second full sweep reads $again of the groups again, and misses nothing',
    async ({ tieOrder }) => {
      // 200 people in pages of 20 and a group of 30 with one updated_at: it straddles a boundary.
      const sandbox = await startSandbox({
        seedSize: { people: 200 },
        seedTies: 30,
        seed: 3,
        behaviour: { crmRateLimit: null, maxPerpage: 20, tieOrder },
      })
      const database = await createTestDatabase()
      try {
        const { counted, wrap } = shifting(sandbox)
        // One process: what the first sweep learnt, the second knows.
        const deps = { ...sweepDeps(database.db, sandboxConfig(sandbox), { wrap }), tieOrders: tieOrders() }
        const sweep = async (n: number) => {
          const { result, jobs } = await startTestRun(database.db, {
            mode: 'full',
            resources: ['crm.people'],
          })
          if (result.status !== 'started') throw new Error('not started')
          await createSweepHandler(deps)([
            { id: `job-${n}`, data: jobs[0], signal: new AbortController().signal },
          ])
          expect((await readRun(database.db, result.runId))?.status).toBe('succeeded')
        }
        await sweep(1)
        expect(counted.again).toBeGreaterThan(0)
        counted.again = 0
        await sweep(2)
        // Nine shifts, nine groups (a record seen twice is a group of its second): by id, one in eight
        // is read again to keep checking; in a new order every time, each of them.
        if (tieOrder === 'by-id') expect(counted.again).toBeLessThanOrEqual(2)
        else expect(counted.again).toBeGreaterThanOrEqual(9)
        // The people the second walk moved to the front are found by its reconciliation; the first
        // walk's, on its first pages.
        await expectPeopleMirrored(database.db, sandbox)
      } finally {
        await sandbox.stop()
        await dropTestDatabase(database)
      }
    },
  )
})
