// A refresh fetches the record unless a fetch sent after its latest delivery already answered it:
// deliveries that trickle in while a refresh waits for the budget cost no second request.
import { sql } from 'kysely'
import type { Job } from 'pg-boss'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createUpstreamClients, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts'
import { insertAcceptedDelivery } from '../../src/store/inbox.ts'
import { createRefreshHandler } from '../../src/sync/handlers/refresh.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
let sandbox: Sandbox
let skipped: string[] = []
let refresh: (id: number) => Promise<void>
let refreshWhenQuiet: (id: number) => Promise<void>

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: { people: 3 }, behaviour: { crmRateLimit: null } })
  const config = parseConfig({ CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey })
  const clients = createUpstreamClients(config, { db: database.db, logger, metrics: createUpstreamMetrics() })
  const handle = createRefreshHandler({
    db: database.db,
    clients,
    logger,
    onSkipped: (resource) => skipped.push(resource),
  })
  refresh = (id) => handle([{ id: `refresh-${id}`, data: { resource: 'crm.people', id } } as Job<unknown>])
  const quietHandle = createRefreshHandler({
    db: database.db,
    clients,
    logger,
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
  await sql`truncate sync.inbox, crm.people`.execute(database.db)
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
    job_id: null,
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
