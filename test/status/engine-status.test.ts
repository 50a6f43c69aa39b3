// collectStatus: what `crm-sync status` and GET /admin/status show, read from the store and pg-boss.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { people, resourceNames } from '../../src/resources/index.ts'
import { collectStatus } from '../../src/status/engine-status.ts'
import { insertRejectedDelivery } from '../../src/store/inbox-insert.ts'
import { writeDetails } from '../../src/store/record-details.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { claimSweep, createRun, finishSweep, saveSweepProgress } from '../../src/store/runs.ts'
import { writeResourceState } from '../../src/store/sync-state.ts'
import { DELIVERY_KIND } from '../../src/sync/delivery/worker.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'
import { insertAcceptedDelivery, markDeliveryProcessed } from '../support/inbox.ts'

const database = useTestDatabase()
const crmOnly = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' })
const withReservations = parseConfig({
  CRM_BASE_URL: 'http://127.0.0.1:1',
  CRM_API_KEY: 'unused-key',
  RESERVATION_BASE_URL: 'http://127.0.0.1:2',
  RESERVATION_API_KEY: 'unused-key',
})
let boss: JobQueue

beforeAll(async () => {
  boss = await startJobQueue(database.url, createLogger({ level: 'silent' }))
})
afterAll(async () => {
  await boss?.stop({ graceful: false })
})

const noJobs = async () => {}

async function runOf(resource: string, mode: 'incremental' | 'full' = 'incremental') {
  const result = await createRun(database.db, { mode, resources: [resource], requestedBy: 'test' }, noJobs)
  if (result.status !== 'created') throw new Error('run refused')
  return { runId: result.runId, resource, lease: randomUUID() }
}

describe('collectStatus', () => {
  it('shows every enabled resource, empty, before anything ran', async () => {
    const status = await collectStatus({ db: database.db, boss, config: crmOnly })
    expect(status.resources.map((resource) => resource.resource)).toEqual(
      resourceNames.filter((name) => name.startsWith('crm.')),
    )
    expect(status.resources[0]).toEqual({
      resource: 'crm.people',
      live_rows: 0,
      remote_count: null,
      remote_count_at: null,
      drift: null,
      watermark: null,
      last_incremental_sync_at: null,
      last_full_sync_at: null,
      last_run: null,
      active_sweep: null,
      waiting_runs: [],
    })
    expect(Date.parse(status.generated_at)).not.toBeNaN()
    const withBoth = await collectStatus({ db: database.db, boss, config: withReservations })
    expect(withBoth.resources.map((resource) => resource.resource)).toContain('reservations.bookings')
  })

  it('reports live rows, the last remote count, drift and the sync times in ISO 8601', async () => {
    const fetched = { source: 'fetch' as const, fetchedAt: new Date() }
    const record = (id: number) => ({ id, updated_at: '2022-12-14T15:53:43.000+01:00' })
    await upsertRecords(database.db, people, [1, 2, 3, 4].map(record), fetched)
    await tombstone(database.db, people, [4])
    const at = new Date('2026-03-01T10:00:00Z')
    await writeResourceState(database.db, 'crm.people', {
      watermark: new Date('2026-03-01T09:55:00Z'),
      last_incremental_sync_at: at,
      last_full_sync_at: new Date('2026-03-01T03:00:00Z'),
      last_remote_count: 5,
      last_remote_count_at: at,
    })
    const status = await collectStatus({ db: database.db, boss, config: crmOnly })
    expect(status.resources.find((resource) => resource.resource === 'crm.people')).toMatchObject({
      live_rows: 3,
      remote_count: 5,
      remote_count_at: '2026-03-01T10:00:00.000Z',
      drift: 2,
      watermark: '2026-03-01T09:55:00.000Z',
      last_incremental_sync_at: '2026-03-01T10:00:00.000Z',
      last_full_sync_at: '2026-03-01T03:00:00.000Z',
    })
  })

  it('shows the latest finished sweep as last_run, and the one under way as active_sweep', async () => {
    const failed = await runOf('crm.deals', 'full')
    await claimSweep(database.db, failed)
    await finishSweep(database.db, async () => {}, failed, {
      status: 'failed',
      error: 'the CRM answered 503',
    })
    const older = await runOf('crm.tasks')
    await claimSweep(database.db, older)
    await finishSweep(database.db, async () => {}, older, { status: 'succeeded' })
    const newer = await runOf('crm.tasks')
    await claimSweep(database.db, newer)
    await finishSweep(database.db, async () => {}, newer, { status: 'succeeded' })
    const running = await runOf('crm.tasks', 'full')
    await claimSweep(database.db, running)
    await saveSweepProgress(database.db, running, { records: 500, pages: 1, remoteCount: 1200 })
    // An operator's incremental request while the full sweep runs: it waits for it.
    const waiting = await runOf('crm.tasks')

    const status = await collectStatus({ db: database.db, boss, config: crmOnly })
    const deals = status.resources.find((resource) => resource.resource === 'crm.deals')
    expect(deals?.last_run).toEqual({
      id: failed.runId,
      mode: 'full',
      status: 'failed',
      finished_at: expect.stringMatching(/Z$/),
      error: 'the CRM answered 503',
    })
    expect(deals?.active_sweep).toBeNull()
    const tasks = status.resources.find((resource) => resource.resource === 'crm.tasks')
    expect(tasks?.last_run).toMatchObject({ id: newer.runId, mode: 'incremental', status: 'succeeded' })
    expect(tasks?.active_sweep).toMatchObject({
      run_id: running.runId,
      status: 'running',
      records: 500,
      pages: 1,
      remote_count: 1200,
      started_at: expect.stringMatching(/Z$/),
    })
    expect(tasks?.waiting_runs).toEqual([waiting.runId])
  })

  it('counts the inbox by status and every queue of crm-sync', async () => {
    const delivery = {
      model: 'person',
      event: 'update',
      shape: 'lean',
      record_id: 1,
      payload: '{}',
      body: null,
    }
    await insertAcceptedDelivery(database.db, { ...delivery, reason: null })
    const processed = await insertAcceptedDelivery(database.db, { ...delivery, reason: null })
    await markDeliveryProcessed(database.db, processed)
    await insertRejectedDelivery(database.db, { ...delivery, reason: 'no usable record id' })
    await insertAcceptedDelivery(database.db, { ...delivery, reason: null })
    await sql`update sync.inbox set status = 'failed' where id = (select max(id) from sync.inbox)`.execute(
      database.db,
    )
    const status = await collectStatus({ db: database.db, boss, config: crmOnly })
    expect(status.inbox).toEqual({ accepted: 1, rejected: 1, processed: 1, failed: 1 })
    // Its size on disk (table, large bodies, indexes), which retention keeps in check.
    const { rows } = await sql<{ bytes: number }>`
      select pg_total_relation_size('sync.inbox') as bytes`.execute(database.db)
    expect(status.inbox_bytes).toBe(rows[0]?.bytes)
    expect(status.inbox_bytes).toBeGreaterThan(0)
    // Deliveries wait in the inbox, not in pg-boss: no delivery queue is listed.
    expect(Object.keys(status.queues).sort()).toEqual(
      Object.values(QUEUES)
        .map((queue) => queue.name)
        .sort(),
    )
    expect(status.queues).not.toHaveProperty(DELIVERY_KIND)
    expect(status.queues[QUEUES.refresh.name]).toEqual({
      queued: expect.any(Number),
      active: expect.any(Number),
      failed: expect.any(Number),
      counted_at: expect.stringMatching(/Z$/),
    })
  })

  it("shows how far the details pass has come with people's historic events and assistants", async () => {
    const { db } = database
    const before = await collectStatus({ db, boss, config: crmOnly })
    const stamp = '2022-12-14T15:53:43.000+01:00'
    const ids = [9001, 9002, 9003]
    await upsertRecords(
      db,
      people,
      ids.map((id) => ({ id, updated_at: stamp })),
      {
        source: 'fetch',
        fetchedAt: new Date(),
      },
    )
    await writeDetails(db, people, 9001, { lists: [], readAt: new Date(), readFor: new Date(stamp) })
    await writeDetails(db, people, 9002, { lists: [], readAt: new Date(), readFor: null })
    const [details] = (await collectStatus({ db, boss, config: crmOnly })).details
    const [was] = before.details
    expect(details).toEqual({
      resource: 'crm.people',
      tables: ['crm.historic_events', 'crm.assistants'],
      budget_percent: 10,
      records: (was?.records ?? 0) + 3,
      current: (was?.current ?? 0) + 1,
      due: { new: (was?.due.new ?? 0) + 1, changed: (was?.due.changed ?? 0) + 1, stale: was?.due.stale ?? 0 },
      failing: was?.failing ?? 0,
      last_read_at: expect.stringMatching(/Z$/),
    })
    const off = parseConfig({
      CRM_BASE_URL: 'http://127.0.0.1:1',
      CRM_API_KEY: 'unused-key',
      DETAILS_BUDGET_PERCENT: '0',
    })
    expect((await collectStatus({ db, boss, config: off })).details[0]?.budget_percent).toBe(0)
    const withoutPeople = parseConfig({
      CRM_BASE_URL: 'http://127.0.0.1:1',
      CRM_API_KEY: 'unused-key',
      MIRROR_RESOURCES: 'crm.deals',
    })
    expect((await collectStatus({ db, boss, config: withoutPeople })).details).toEqual([])
  })
})
