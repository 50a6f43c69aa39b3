// Sweeps of CRM resources against the sandbox and a real database: incremental from an empty mirror
// and after changes, full sweeps with reconciliation (tag changes that left updated_at alone,
// deletions found only through a 404, records changed or deleted while the pages go by), failures
// recorded as failed, and a crash that resumes.
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type CrmCollection, type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { UpstreamUnavailableError } from '../../src/api-client/index.ts'
import { users } from '../../src/resources/crm.ts'
import { type AnyResource, findResource, people, tasks } from '../../src/resources/index.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { readRun } from '../../src/store/runs.ts'
import { readResourceState } from '../../src/store/sync-state.ts'
import { SweepInterrupted } from '../../src/sync/sweep/context.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { isTransientDatabaseError } from '../../src/sync/sweep/sweep-resource.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import {
  deletedIds,
  mirrorOf,
  sandboxConfig,
  startTestRun,
  sweep,
  sweepDeps,
  tappedPeople,
  truthOf,
  virtualClock,
} from './support.ts'

let database: TestDatabase
let sandbox: Sandbox

beforeEach(async () => {
  database = await createTestDatabase()
  // 20 records a page, so that 200 people make 10 pages whatever perpage asks for.
  sandbox = await startSandbox({
    seedSize: { people: 200, companies: 30, deals: 30, projects: 20, tasks: 45 },
    // Ties by id, as the tests list records newest first; ties.test.ts walks under shuffled ties.
    behaviour: { crmRateLimit: null, maxPerpage: 20, tieOrder: 'by-id' },
  })
})
afterEach(async () => {
  await sandbox.stop()
  await dropTestDatabase(database)
})

const crmCollection = (resource: AnyResource) => resource.path as CrmCollection
const truth = (resource: AnyResource) =>
  truthOf(
    sandbox.control.crm
      .liveIds(crmCollection(resource))
      .map((id) => sandbox.control.crm.get(crmCollection(resource), id) as { id: number }),
    resource,
  )

/** Live people as the index lists them with `updated_at-desc`: newest first, ties by id. */
function peopleNewestFirst(): number[] {
  const records = sandbox.control.crm.liveIds('people').map((id) => {
    const record = sandbox.control.crm.get('people', id) as { id: number; updated_at: string }
    return { id, at: Date.parse(record.updated_at) }
  })
  return records.sort((a, b) => b.at - a.at || a.id - b.id).map((record) => record.id)
}

describe('incremental sweeps', () => {
  it('write a page holding text PostgreSQL cannot hold (NUL, half a surrogate pair), with U+FFFD there', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox))
    const [first, second] = sandbox.control.crm.liveIds('people') as [number, number]
    sandbox.control.crm.update('people', first, { name: 'nul \u0000 inside' })
    sandbox.control.crm.update('people', second, { first_name: 'lone \udc00' })

    const runId = await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    expect((await readRun(database.db, runId))?.status).toBe('succeeded')
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
    const rows = await database.db
      .selectFrom('crm.people')
      .select(['id', 'name', 'first_name'])
      .where('id', 'in', [first, second])
      .orderBy('id')
      .execute()
    expect(rows).toEqual([
      expect.objectContaining({ id: first, name: 'nul \uFFFD inside' }),
      expect.objectContaining({ id: second, first_name: 'lone \uFFFD' }),
    ])
  })

  it('make an empty mirror equal to the sandbox, every CRM resource', async () => {
    const config = sandboxConfig(sandbox)
    const names = ['crm.people', 'crm.companies', 'crm.deals', 'crm.projects', 'crm.tasks', 'crm.users']
    const started = Date.now()
    const runId = await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: names })
    const elapsed = Date.now() - started

    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('succeeded')
    expect(run?.error).toBeNull()
    for (const name of names.filter((name) => name !== 'crm.users')) {
      const resource = findResource(name) as AnyResource
      expect(await mirrorOf(database.db, resource), name).toEqual(truth(resource))
    }
    expect((await mirrorOf(database.db, users)).map((row) => row.id)).toHaveLength(5)

    const swept = run?.resources.find((resource) => resource.resource === 'crm.people')
    // The count (it bounds the walk and shows its progress), 10 full pages and an empty 11th.
    expect(swept).toMatchObject({ status: 'succeeded', records: 200, pages: 10, remote_count: 200 })
    expect(swept?.api_requests).toBe(12)
    const state = await readResourceState(database.db, 'crm.people')
    const sweepStart = swept?.started_at as Date
    expect(state?.watermark?.getTime()).toBe(sweepStart.getTime() - 5_000)
    expect(state).toMatchObject({ last_remote_count: 200, last_incremental_sync_at: sweepStart })
    // Read to the end and reconciled, so it counts as a full sync too.
    expect(state?.last_full_sync_at).toEqual(sweepStart)
    console.info(
      `first incremental of 325 CRM records: ${elapsed} ms, ${sandbox.control.counters().crm.requests} requests`,
    )
  })

  it('after changes, fetch only the pages down to the watermark', async () => {
    // The kinder variant, named: here a tag change bumps its person to page 1 like any other change.
    // By default it does not, and only a full sweep brings it (see 'full sweeps').
    sandbox.control.setBehaviour({ childChangesTouchParent: true })
    const config = sandboxConfig(sandbox)
    const deps = sweepDeps(database.db, config)
    await sweep(deps, { mode: 'incremental', resources: ['crm.people', 'crm.tasks'] })

    const [first, second, third] = sandbox.control.crm.liveIds('people')
    sandbox.control.crm.update('people', first as number, { name: 'Changed' })
    sandbox.control.crm.addTag('people', second as number, 'vip')
    sandbox.control.crm.update('people', third as number, { first_name: 'Also' })
    sandbox.control.crm.create('people', { name: 'Newcomer' })
    const task = sandbox.control.crm.liveIds('tasks')[0] as number
    sandbox.control.crm.update('tasks', task, { name: 'Call back' })
    sandbox.control.resetCounters()

    const runId = await sweep(deps, { mode: 'incremental', resources: ['crm.people', 'crm.tasks'] })
    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('succeeded')
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
    expect(await mirrorOf(database.db, tasks)).toEqual(truth(tasks))
    const swept = run?.resources.find((resource) => resource.resource === 'crm.people')
    // Page 1 holds the 4 changes and older records, page 2 only older ones; then the count agrees.
    expect(swept).toMatchObject({ pages: 2, records: 40, remote_count: 201, reconciled: 0 })
    expect(swept?.api_requests).toBeLessThanOrEqual(3)
    expect(sandbox.control.counters().crm.requests).toBeLessThanOrEqual(3 + 2)
  })

  it('walk on and reconcile when the count differs from the live rows', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox))
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const gone = peopleNewestFirst().slice(-3) // the oldest: no incremental page reaches them
    for (const id of gone) sandbox.control.crm.destroy('people', id)
    // Nothing changed that the newest page or a delivery shows: the next sweep verifies nothing.
    const idle = await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    expect((await readRun(database.db, idle))?.resources[0]).toMatchObject({
      status: 'succeeded',
      pages: 1,
      remote_count: null,
      api_requests: 1,
    })
    // Two intervals later, its count is due.
    await sql`
      update sync.resource_state set last_remote_count_at = last_remote_count_at - interval '1 hour',
        last_full_sync_at = last_full_sync_at - interval '1 hour',
        last_verified_at = last_verified_at - interval '1 hour'
    `.execute(database.db)

    const runId = await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const swept = (await readRun(database.db, runId))?.resources[0]
    expect(swept).toMatchObject({
      status: 'succeeded',
      pages: 10,
      remote_count: 197,
      reconciled: 3,
      tombstoned: 3,
    })
    expect(await deletedIds(database.db, people)).toEqual([...gone].sort((a, b) => a - b))
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })

  it('verify a resource without a count route by a complete walk when it is due, not every cycle', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox))
    const both = { mode: 'incremental' as const, resources: ['crm.tasks', 'crm.users'] }
    await sweep(deps, both)
    const [task] = sandbox.control.crm.liveIds('tasks') as [number]
    sandbox.control.crm.destroy('tasks', task) // silently: tasks have no webhooks, no count

    const idle = await readRun(database.db, await sweep(deps, both))
    expect(
      idle?.resources.map(({ resource, pages, api_requests, tombstoned }) => ({
        resource,
        pages,
        api_requests,
        tombstoned,
      })),
    ).toEqual([
      { resource: 'crm.tasks', pages: 1, api_requests: 1, tombstoned: 0 },
      // Users fit on one page (see short-list.ts): it is read each cycle; tasks take three here.
      { resource: 'crm.users', pages: 1, api_requests: 1, tombstoned: 0 },
    ])
    // A complete walk that began an hour ago but ended just now (a long one, under a shared budget):
    // the next is due a period after its end, not at once.
    await sql`update sync.resource_state set last_full_sync_at = last_full_sync_at - interval '1 hour'`.execute(
      database.db,
    )
    const afterLongWalk = await readRun(database.db, await sweep(deps, both))
    expect(afterLongWalk?.resources.map(({ pages, tombstoned }) => ({ pages, tombstoned }))).toEqual([
      { pages: 1, tombstoned: 0 },
      { pages: 1, tombstoned: 0 },
    ])
    // Two intervals later (INCREMENTAL_SYNC_INTERVAL 300 here), their complete walks are due.
    await sql`update sync.resource_state set last_verified_at = last_verified_at - interval '1 hour'`.execute(
      database.db,
    )
    const due = await readRun(database.db, await sweep(deps, both))
    expect(due?.resources.map(({ resource, tombstoned }) => ({ resource, tombstoned }))).toEqual([
      { resource: 'crm.tasks', tombstoned: 1 },
      { resource: 'crm.users', tombstoned: 0 },
    ])
    expect(due?.resources[1]?.pages).toBeGreaterThan(0)
    expect(await deletedIds(database.db, tasks)).toEqual([task])
  })

  it('take the repeats that records changing during the walk push onto the next page as order', async () => {
    const config = sandboxConfig(sandbox)
    const deps = sweepDeps(database.db, config)
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    // A watermark at the 50th newest record (the seeded records' times are seconds apart): the walk
    // has three pages of 20 to read.
    const fiftieth = sandbox.control.crm.get('people', order[49] as number) as unknown as {
      updated_at: string
    }
    await sql`update sync.resource_state set watermark = ${fiftieth.updated_at}::timestamptz
      where resource = 'crm.people'`.execute(database.db)
    // After page 1, five old records change: they jump to the front, and page 2 begins with the
    // last five records of page 1 again, newer than the end of page 1.
    const shifting = sweepDeps(database.db, config, {
      wrap: tappedPeople((page) => {
        if (page !== 1) return
        for (const id of order.slice(-5)) sandbox.control.crm.update('people', id, { name: 'Moved' })
      }),
    })
    const runId = await sweep(shifting, { mode: 'incremental', resources: ['crm.people'] })
    const swept = (await readRun(database.db, runId))?.resources[0]
    expect(swept).toMatchObject({ status: 'succeeded', reconciled: 0 })
    expect(swept?.pages).toBeLessThanOrEqual(4) // not every one of the 10
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })

  it('walk every page when the index is not in updated_at order (never stop early on a guess)', async () => {
    const config = sandboxConfig(sandbox)
    await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: ['crm.people'] })
    const oldest = peopleNewestFirst().at(-1) as number
    sandbox.control.crm.update('people', oldest, { name: 'Zuletzt' })
    // An upstream that ignores `order` (the sandbox answers name-asc, as the CRM does for an unknown one).
    const unordered = sweepDeps(database.db, config, {
      wrap: (clients) => ({
        ...clients,
        crm: {
          ...clients.crm,
          index: (resource, query) => clients.crm.index(resource, { ...query, order: undefined }),
        },
      }),
    })
    const runId = await sweep(unordered, { mode: 'incremental', resources: ['crm.people'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({
      status: 'succeeded',
      pages: 10,
    })
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })
})

describe('full sweeps', () => {
  it('bring tag and address changes that left updated_at alone, on pages no incremental sweep reaches', async () => {
    const deps = sweepDeps(database.db, sandboxConfig(sandbox))
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    const onLastPage = order[order.length - 1] as number
    const tagsUpstream = (id: number) =>
      (sandbox.control.crm.get('people', id)?.tags ?? []) as { id: number }[]
    const tagged = order.slice(100).find((id) => tagsUpstream(id).length > 0) as number
    const [removed] = tagsUpstream(tagged)
    sandbox.control.crm.addTag('people', onLastPage, 'late')
    sandbox.control.crm.removeTag('people', tagged, (removed as { id: number }).id)
    const address = sandbox.control.crm.addAddress('people', onLastPage, {
      street: 'Markt 1',
      city: 'Leipzig',
    })
    const tagsOf = async (id: number) =>
      (await mirrorOf(database.db, people)).find((row) => row.id === id)?.tags
    const addressMirrored = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from crm.addresses
        where _parent_resource = 'crm.people' and _parent_id = ${onLastPage} and id = ${address.id}
          and city = 'Leipzig'`.execute(database.db)
      ).rows[0]?.n === 1
    // The index shows no sign of them (updated_at is what it was): an incremental sweep stops early.
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    expect(await tagsOf(onLastPage)).not.toContain('late')
    expect(await addressMirrored()).toBe(false)

    const runId = await sweep(deps, { mode: 'full', resources: ['crm.people'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({
      status: 'succeeded',
      pages: 10,
    })
    expect(await tagsOf(onLastPage)).toContain('late')
    expect(await addressMirrored()).toBe(true)
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })

  it('tombstone a record deleted upstream only after show answers 404, and keep one changed meanwhile', async () => {
    const config = sandboxConfig(sandbox)
    await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    const deleted = [order[30], order[120]] as number[]
    for (const id of deleted) sandbox.control.crm.destroy('people', id)
    // Changed while the sweep is at page 3: it jumps to page 1, which the walk has passed.
    const moved = order[150] as number
    const shows: number[] = []
    const deps = sweepDeps(database.db, config, {
      wrap: tappedPeople((page) => {
        if (page === 3) sandbox.control.crm.update('people', moved, { name: 'Moved' })
      }, shows),
    })

    const runId = await sweep(deps, { mode: 'full', resources: ['crm.people'] })
    const swept = (await readRun(database.db, runId))?.resources[0]
    expect(swept).toMatchObject({ status: 'succeeded', tombstoned: 2 })
    expect(shows.sort()).toEqual([...deleted, moved].sort())
    expect(await deletedIds(database.db, people)).toEqual([...deleted].sort((a, b) => a - b))
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
    const state = await readResourceState(database.db, 'crm.people')
    expect(state?.last_full_sync_at).toEqual(swept?.started_at)
  })

  it('neither lose nor keep for good a record deleted during the sweep', async () => {
    const config = sandboxConfig(sandbox)
    const deps = sweepDeps(database.db, config)
    await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    const order = peopleNewestFirst()
    const seenThenDeleted = order[10] as number // on page 1, deleted after page 3
    const notYetReached = order[150] as number // on page 8
    const shifted = order[60] as number // moves from page 4 to page 3 when order[10] goes
    const during = sweepDeps(database.db, config, {
      wrap: tappedPeople((page) => {
        if (page !== 3) return
        sandbox.control.crm.destroy('people', seenThenDeleted)
        sandbox.control.crm.destroy('people', notYetReached)
      }),
    })

    await sweep(during, { mode: 'full', resources: ['crm.people'] })
    expect(await deletedIds(database.db, people)).toEqual([notYetReached])
    const live = (await mirrorOf(database.db, people)).map((row) => row.id)
    expect(live).toContain(shifted)
    // Seen before it went: nothing in this sweep can tell. The next incremental's count does.
    expect(live).toContain(seenThenDeleted)

    const runId = await sweep(deps, { mode: 'incremental', resources: ['crm.people'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({
      status: 'succeeded',
      tombstoned: 1,
    })
    expect(await deletedIds(database.db, people)).toEqual(
      [seenThenDeleted, notYetReached].sort((a, b) => a - b),
    )
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })

  it('tombstone users no complete sweep lists, without show (there is none)', async () => {
    const fetchedAt = new Date(Date.now() - 60_000)
    await upsertRecords(database.db, users, [{ id: 424242, name: 'Former' }], { source: 'fetch', fetchedAt })
    const runId = await sweep(sweepDeps(database.db, sandboxConfig(sandbox)), {
      mode: 'incremental',
      resources: ['crm.users'],
    })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({
      status: 'succeeded',
      tombstoned: 1,
    })
    expect(await deletedIds(database.db, users)).toEqual([424242])
    expect(await mirrorOf(database.db, users)).toHaveLength(5)
  })
})

describe('failures', () => {
  it('end a sweep that got only errors as failed, with the requests its retries spent', async () => {
    const config = sandboxConfig(sandbox, { UPSTREAM_MAX_RETRIES: '2' })
    const deps = sweepDeps(database.db, config, { clock: virtualClock() })
    sandbox.control.setFaults({ crm: { errorRate: 1 } })

    const runId = await sweep(deps, { mode: 'incremental', resources: ['crm.people', 'crm.tasks'] })
    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('failed')
    // The first incremental sweep counts first (the count bounds its walk of every page).
    expect(run?.error).toMatch(/crm\.people: crm GET \/api\/people\/count: server error 500/)
    expect(run?.finished_at).not.toBeNull()
    for (const swept of run?.resources ?? []) {
      expect(swept).toMatchObject({ status: 'failed', pages: 0 })
      expect(swept.api_requests).toBe(3) // the count or the first page: one attempt and two retries
    }
    expect(await readResourceState(database.db, 'crm.people')).toBeUndefined()
  })

  it('end a sweep that ran out of retries on 429 as failed, never succeeded', async () => {
    const config = sandboxConfig(sandbox, { UPSTREAM_MAX_RETRIES: '3' })
    await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: ['crm.people'] })
    const before = await readResourceState(database.db, 'crm.people')
    // Throttled from the third request on: the walk has begun when the budget runs out.
    let requests = 0
    const deps = sweepDeps(database.db, config, {
      clock: virtualClock(),
      wrap: tappedPeople(() => {
        if (++requests === 2) sandbox.control.setFaults({ crm: { throttleRate: 1 } })
      }),
    })

    const runId = await sweep(deps, { mode: 'full', resources: ['crm.people'] })
    const run = await readRun(database.db, runId)
    expect(run).toMatchObject({ status: 'failed' })
    expect(run?.error).toMatch(/rate limited \(429\)/)
    expect(run?.resources[0]).toMatchObject({ status: 'failed', pages: 2 })
    // A failed sweep leaves the watermark where the last successful one put it.
    expect(await readResourceState(database.db, 'crm.people')).toMatchObject({ watermark: before?.watermark })
  })
})

describe('errors a retry can fix', () => {
  it('are those of the database going away, never those of the upstream', () => {
    const pgError = (code: string) => Object.assign(new Error('terminating connection'), { code })
    expect(isTransientDatabaseError(pgError('57P01'))).toBe(true)
    expect(isTransientDatabaseError(pgError('08006'))).toBe(true)
    expect(isTransientDatabaseError(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(isTransientDatabaseError(pgError('23505'))).toBe(false)
    expect(isTransientDatabaseError(new TypeError('x is undefined'))).toBe(false)
    const line = { service: 'crm' as const, method: 'GET', path: '/api/people', sentAt: new Date() }
    const upstream = new UpstreamUnavailableError(line, 'network', 3, null, null, 'ECONNRESET')
    expect(isTransientDatabaseError(Object.assign(upstream, { code: 'ECONNRESET' }))).toBe(false)
  })
})

describe('a sweep interrupted mid-walk', () => {
  it('resumes from its checkpoint on the retry of its job and converges', async () => {
    const config = sandboxConfig(sandbox)
    await sweep(sweepDeps(database.db, config), { mode: 'incremental', resources: ['crm.people'] })
    const { result, jobs } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    if (result.status !== 'started') throw new Error('not started')
    const job = jobs[0]
    const fetched: number[] = []
    const crash = new AbortController()
    const first = createSweepHandler(
      sweepDeps(database.db, config, {
        wrap: tappedPeople((page) => {
          fetched.push(page)
          if (page === 4) crash.abort()
        }),
      }),
    )
    await expect(first([{ id: 'job-1', data: job, signal: crash.signal }])).rejects.toThrow(SweepInterrupted)
    const halfway = (await readRun(database.db, result.runId))?.resources[0]
    expect(halfway).toMatchObject({ status: 'running', pages: 4, records: 80 })
    expect((await readRun(database.db, result.runId))?.status).toBe('running')

    // While nobody sweeps: a person on a page not yet read goes, another changes.
    const order = peopleNewestFirst()
    sandbox.control.crm.destroy('people', order[170] as number)
    sandbox.control.crm.update('people', order[190] as number, { name: 'Late change' })
    const before = await readResourceState(database.db, 'crm.people')

    fetched.length = 0
    const retry = createSweepHandler(
      sweepDeps(database.db, config, { wrap: tappedPeople((page) => fetched.push(page)) }),
    )
    await retry([{ id: 'job-1', data: job, signal: new AbortController().signal }])
    expect(fetched[0]).toBe(5)
    const run = await readRun(database.db, result.runId)
    expect(run?.status).toBe('succeeded')
    expect(run?.resources[0]).toMatchObject({ status: 'succeeded', tombstoned: 1 })
    expect(await deletedIds(database.db, people)).toEqual([order[170]])
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
    // A resumed walk is no verification: a record deleted from a page read before the interruption
    // would count as seen. The next verification is as due as before.
    const after = await readResourceState(database.db, 'crm.people')
    expect(after?.last_verified_at).toEqual(before?.last_verified_at)
    expect(after?.last_full_sync_at).toEqual(before?.last_full_sync_at)
  })

  it('is taken over by a retry: the attempt it replaced stops writing', async () => {
    const config = sandboxConfig(sandbox)
    const { result, jobs } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    if (result.status !== 'started') throw new Error('not started')
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let reachedPage2: () => void = () => {}
    const atPage2 = new Promise<void>((resolve) => {
      reachedPage2 = resolve
    })
    const stalled = createSweepHandler(
      sweepDeps(database.db, config, {
        wrap: (clients) => ({
          ...clients,
          crm: {
            ...clients.crm,
            async index(resource, query) {
              const page = await clients.crm.index(resource, query)
              if (page.page === 2) {
                reachedPage2()
                await held // a worker that stopped answering, its job given to another
              }
              return page
            },
          },
        }),
      }),
    )
    const job = { id: 'job-1', data: jobs[0], signal: new AbortController().signal }
    const first = stalled([job])
    await atPage2
    await createSweepHandler(sweepDeps(database.db, config))([job])
    const finished = await readRun(database.db, result.runId)
    expect(finished?.status).toBe('succeeded')
    release()
    await first // returns quietly: superseded
    const after = await readRun(database.db, result.runId)
    expect(after?.resources[0]).toEqual(finished?.resources[0])
    expect(await mirrorOf(database.db, people)).toEqual(truth(people))
  })
})
