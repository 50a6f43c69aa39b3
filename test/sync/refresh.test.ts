// A refresh fetches the record unless a fetch sent after its latest delivery already answered it (or a
// full sweep that began since will): deliveries that trickle in while a refresh waits for the budget
// cost no second request.
import { sql } from 'kysely'
import type { Job } from 'pg-boss'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createUpstreamClients, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { type AnyResource, findResource } from '../../src/resources/index.ts'
import { abandonSweep, claimSweep, handBackSweep } from '../../src/store/runs.ts'
import { createCatchUp } from '../../src/sync/refresh/catch-up.ts'
import { createRefreshHandler } from '../../src/sync/refresh/handler.ts'
import { useTestDatabase } from '../support/database.ts'
import { insertAcceptedDelivery } from '../support/inbox.ts'
import { startTestRun } from './support.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
let sandbox: Sandbox
let skipped: string[] = []
// Checks the handler queued: dependants of records it found gone.
let checks: { resource: string; ids: readonly number[] }[] = []
const queueChecks = async (_trx: unknown, resource: string, ids: readonly number[]) => {
  checks.push({ resource, ids })
}
let refresh: (id: number) => Promise<void>
let check: (job: { id: number; askedAt: string; cascade: true }) => Promise<void>
let deferred: unknown[] = []
let refreshWhenQuiet: (id: number) => Promise<void>

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: { people: 3 }, behaviour: { crmRateLimit: null } })
  const config = parseConfig({ CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey })
  const clients = createUpstreamClients(config, { db: database.db, logger, metrics: createUpstreamMetrics() })
  const handle = createRefreshHandler({
    db: database.db,
    clients,
    logger,
    queueChecks,
    onSkipped: (resource) => skipped.push(resource),
  })
  refresh = (id) => handle([{ id: `refresh-${id}`, data: { resource: 'crm.people', id } } as Job<unknown>])
  const checkHandle = createRefreshHandler({
    db: database.db,
    clients,
    logger,
    queueChecks,
    defer: async (job) => {
      deferred.push(job)
    },
    onSkipped: (resource) => skipped.push(resource),
  })
  check = (job) =>
    checkHandle([{ id: `check-${job.id}`, data: { resource: 'crm.people', ...job } } as Job<unknown>])
  const quietHandle = createRefreshHandler({
    db: database.db,
    clients,
    logger,
    queueChecks,
    quiet: {
      quietMs: 300,
      maxWaitMs: 5_000,
      pressure: { windowMs: 10_000, deliveries: 1_000, quietMs: 2_000 },
    },
  })
  refreshWhenQuiet = (id) =>
    quietHandle([{ id: `quiet-${id}`, data: { resource: 'crm.people', id } } as Job<unknown>])
})
afterAll(async () => {
  await sandbox?.stop()
})
beforeEach(async () => {
  skipped = []
  checks = []
  deferred = []
  await sql`truncate sync.inbox, crm.people, crm.tasks`.execute(database.db)
})

const shows = () => sandbox.control.counters().crm.routes['GET /api/people/:id'] ?? 0

const delivered = (id: number) =>
  insertAcceptedDelivery(database.db, {
    model: 'person',
    event: 'update',
    shape: 'lean',
    record_id: id,
    payload: JSON.stringify({ model: 'person', event: 'update', record_id: id }),
    body: null,
    reason: null,
  })

/** Milliseconds from the arrival of delivery `inboxId` to the request of the fetch that wrote the row. */
async function fetchedAfter(id: number, inboxId: number): Promise<number> {
  const { received_at } = await database.db
    .selectFrom('sync.inbox')
    .select('received_at')
    .where('id', '=', inboxId)
    .executeTakeFirstOrThrow()
  const row = await database.db
    .selectFrom('crm.people')
    .select('_fetched_at')
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  return (row._fetched_at?.getTime() ?? Number.NaN) - received_at.getTime()
}

describe('a refresh', () => {
  it('is skipped when the row was fetched after the latest delivery, and sent after a new one', async () => {
    const [id] = sandbox.control.crm.liveIds('people') as [number]
    await delivered(id)
    const before = shows()
    await refresh(id)
    expect(shows()).toBe(before + 1)
    const row = await database.db
      .selectFrom('crm.people')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    const { received_at } = await database.db
      .selectFrom('sync.inbox')
      .select('received_at')
      .executeTakeFirstOrThrow()
    expect(row._fetched_at?.getTime()).toBeGreaterThanOrEqual(received_at.getTime())

    // The same delivery again (a coalesced refresh of the next slot): answered already.
    await refresh(id)
    expect(shows()).toBe(before + 1)
    expect(skipped).toEqual(['crm.people'])

    // A delivery after that fetch: the record is fetched again.
    sandbox.control.crm.update('people', id, { first_name: 'Changed' })
    await delivered(id)
    await refresh(id)
    expect(shows()).toBe(before + 2)
    const changed = await database.db
      .selectFrom('crm.people')
      .select('first_name')
      .where('id', '=', id)
      .executeTakeFirst()
    expect(changed?.first_name).toBe('Changed')
  })

  it('is skipped while a full sweep of its resource that started after its delivery runs', async () => {
    const [id] = sandbox.control.crm.liveIds('people') as [number]
    await delivered(id)
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    const runId = result.status === 'started' ? result.runId : 0
    expect(await claimSweep(database.db, { runId, resource: 'crm.people', lease: 'test' })).not.toBeNull()
    try {
      const before = shows()
      await refresh(id)
      expect(shows()).toBe(before)
      expect(skipped).toEqual(['crm.people'])
      // A delivery after the sweep began: the sweep may have read its page already.
      await delivered(id)
      await refresh(id)
      expect(shows()).toBe(before + 1)
    } finally {
      await abandonSweep(database.db, async () => {}, runId, 'crm.people', 'test over')
    }
  })

  it('is skipped too while that full sweep waits, handed back by a process that stopped', async () => {
    const [id] = sandbox.control.crm.liveIds('people') as [number]
    await delivered(id)
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    const runId = result.status === 'started' ? result.runId : 0
    const key = { runId, resource: 'crm.people', lease: 'test' }
    expect(await claimSweep(database.db, key)).not.toBeNull()
    expect(await handBackSweep(database.db, key)).toBe(true)
    try {
      const before = shows()
      await refresh(id)
      expect(shows()).toBe(before)
      expect(skipped).toEqual(['crm.people'])
    } finally {
      await abandonSweep(database.db, async () => {}, runId, 'crm.people', 'test over')
    }
  })

  it('as a cascade check, is put off while a full sweep of its resource runs, then fetches only what that sweep left', async () => {
    const [a, b] = sandbox.control.crm.liveIds('people') as [number, number]
    await sql`insert into crm.people (id, updated_at, _source) values (${a}, now(), 'payload'), (${b}, now(), 'payload')`.execute(
      database.db,
    )
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    const runId = result.status === 'started' ? result.runId : 0
    expect(await claimSweep(database.db, { runId, resource: 'crm.people', lease: 'test' })).not.toBeNull()
    const askedAt = new Date(Date.now() + 1).toISOString() // the parent was found gone after the sweep began
    const before = shows()
    try {
      await check({ id: a, askedAt, cascade: true })
      await check({ id: b, askedAt, cascade: true })
      expect(shows()).toBe(before)
      expect(deferred).toEqual([
        { resource: 'crm.people', id: a, askedAt, cascade: true },
        { resource: 'crm.people', id: b, askedAt, cascade: true },
      ])
      // The sweep read a's page after the check was asked (or reconciled it away); not b's.
      await sql`update crm.people set _fetched_at = now() + interval '1 second', _source = 'fetch' where id = ${a}`.execute(
        database.db,
      )
    } finally {
      await abandonSweep(database.db, async () => {}, runId, 'crm.people', 'test over')
    }
    deferred = []
    await check({ id: a, askedAt, cascade: true })
    expect(shows()).toBe(before)
    expect(skipped).toEqual(['crm.people'])
    await check({ id: b, askedAt, cascade: true })
    expect(shows()).toBe(before + 1)
    expect(deferred).toEqual([])
  })

  it('is sent when the row came from a payload (never fetched), or there is no row', async () => {
    const [, id] = sandbox.control.crm.liveIds('people') as [number, number]
    await delivered(id)
    await sql`insert into crm.people (id, updated_at, _source) values (${id}, now(), 'payload')`.execute(
      database.db,
    )
    const before = shows()
    await refresh(id)
    expect(shows()).toBe(before + 1)
    expect(skipped).toEqual([])
  })

  it('records the 404 of a deleted record as a fetch, so later deliveries before it cost nothing', async () => {
    const [, , id] = sandbox.control.crm.liveIds('people') as [number, number, number]
    sandbox.control.crm.destroy('people', id)
    await delivered(id)
    await refresh(id)
    const row = await database.db
      .selectFrom('crm.people')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    expect(row._deleted_at).toBeInstanceOf(Date)
    expect(row._fetched_at).toBeInstanceOf(Date)
    const before = shows()
    await refresh(id)
    expect(shows()).toBe(before)
  })

  it("queues a check of the live tasks of a record it finds gone (the upstream's silent cascade)", async () => {
    const id = sandbox.control.crm.create('people', { name: 'Doomed' }).id as number
    sandbox.control.crm.destroy('people', id)
    await sql`
      insert into crm.tasks (id, attachable_type, attachable_id, _deleted_at) values
        (1, 'Person', ${id}, null), (2, 'Person', ${id}, null), (3, 'Person', ${id}, now()),
        (4, 'Company', ${id}, null), (5, 'Person', ${id + 1}, null)
    `.execute(database.db)
    await refresh(id)
    expect(checks).toEqual([{ resource: 'crm.tasks', ids: [1, 2] }])
    // Already tombstoned: nothing is checked again.
    await refresh(id)
    expect(checks).toHaveLength(1)
  })

  it('waits until its record has had no delivery for the quiet time, then fetches once', async () => {
    const [id] = sandbox.control.crm.liveIds('people') as [number]
    await delivered(id)
    const before = shows()
    const running = refreshWhenQuiet(id)
    // More deliveries while the refresh waits: the one fetch comes after the last of them.
    await delivered(id)
    const last = await delivered(id)
    await running
    expect(shows()).toBe(before + 1)
    expect(await fetchedAfter(id, last)).toBeGreaterThanOrEqual(300)
  })

  it('waits longer while deliveries arrive faster than the budget could fetch their records', async () => {
    const config = parseConfig({ CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey })
    const clients = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    const handle = createRefreshHandler({
      db: database.db,
      clients,
      logger,
      queueChecks,
      quiet: {
        quietMs: 100,
        maxWaitMs: 5_000,
        pressure: { windowMs: 10_000, deliveries: 3, quietMs: 1_000 },
      },
    })
    const [id] = sandbox.control.crm.liveIds('people') as [number]
    await delivered(id)
    await delivered(id)
    const last = await delivered(id)
    await handle([{ id: 'pressed', data: { resource: 'crm.people', id } } as Job<unknown>])
    expect(await fetchedAfter(id, last)).toBeGreaterThanOrEqual(1_000)
  })
})

describe('a backlog of refreshes', () => {
  it('is answered by the newest page of the index, one request instead of a show each', async () => {
    const config = parseConfig({ CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey })
    const clients = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    const ids = sandbox.control.crm.liveIds('people')
    const inboxIds: number[] = []
    for (const id of ids) {
      sandbox.control.crm.update('people', id, { first_name: `Burst ${id}` })
      inboxIds.push(await delivered(id))
    }
    const catchUp = createCatchUp({
      db: database.db,
      logger,
      reader: () => clients.crm,
      // None queued: the refreshes running in this process are the backlog.
      queued: async () => ({ pending: 0, oldest: null }),
      minBacklog: 2,
      skewSeconds: 5,
    })
    const handle = createRefreshHandler({
      db: database.db,
      clients,
      logger,
      queueChecks,
      catchUp,
      onSkipped: (resource) => skipped.push(resource),
    })
    const counters = () => sandbox.control.counters().crm.routes
    const before = { index: counters()['GET /api/people'] ?? 0, show: shows() }
    await Promise.all(
      ids.map((id) => handle([{ id: `burst-${id}`, data: { resource: 'crm.people', id } } as Job<unknown>])),
    )

    expect({
      index: (counters()['GET /api/people'] ?? 0) - before.index,
      show: shows() - before.show,
    }).toEqual({
      index: 1,
      show: 0,
    })
    expect(skipped).toHaveLength(ids.length)
    const rows = await database.db
      .selectFrom('crm.people')
      .select(['id', 'first_name'])
      .orderBy('id')
      .execute()
    expect(rows).toEqual(ids.map((id) => ({ id, first_name: `Burst ${id}` })).sort((a, b) => a.id - b.id))
    for (const [i, id] of ids.entries())
      expect(await fetchedAfter(id, inboxIds[i] as number)).toBeGreaterThanOrEqual(0)
  })
})

describe('a catch-up walk', () => {
  it('stops at the first page the mirror holds all of, however many refreshes wait', async () => {
    const paged = await startSandbox({
      seedSize: { people: 6 },
      behaviour: { crmRateLimit: null, maxPerpage: 1 },
    })
    try {
      const config = parseConfig({ CRM_BASE_URL: paged.crmUrl, CRM_API_KEY: paged.crmApiKey })
      const clients = createUpstreamClients(config, {
        db: database.db,
        logger,
        metrics: createUpstreamMetrics(),
      })
      const catchUp = createCatchUp({
        db: database.db,
        logger,
        reader: () => clients.crm,
        // More refreshes wait than the account has records, since before any record changed.
        queued: async () => ({ pending: 100, oldest: null }),
        minBacklog: 2,
        skewSeconds: 5,
      })
      const people = findResource('crm.people') as AnyResource
      const pages = () => paged.control.counters().crm.routes['GET /api/people'] ?? 0
      // An empty mirror lacks every page: the walk reads them all, and the empty one after.
      await catchUp.join(people)
      expect(pages()).toBe(7)
      const [changed] = paged.control.crm.liveIds('people') as [number]
      paged.control.crm.update('people', changed, { first_name: 'Changed' })

      await catchUp.join(people)
      // Page 1 holds the change; page 2 nothing the mirror lacks.
      expect(pages()).toBe(7 + 2)
      const row = await database.db
        .selectFrom('crm.people')
        .select('first_name')
        .where('id', '=', changed)
        .executeTakeFirstOrThrow()
      expect(row.first_name).toBe('Changed')
    } finally {
      await paged.stop()
    }
  })
})
