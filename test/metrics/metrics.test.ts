// /metrics: the names, and that each one moves with what it counts. Unit tests drive createMetrics
// directly; the last test watches the running service do the work.

import { randomBytes, randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createUpstreamMetrics } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createMetricsRoute } from '../../src/http/metrics.ts'
import { createLogger } from '../../src/log.ts'
import { createMetrics, type MetricsSources } from '../../src/metrics/index.ts'
import { createReceiverCounters } from '../../src/receiver/counters.ts'
import { people } from '../../src/resources/index.ts'
import { insertRejectedDelivery } from '../../src/store/inbox-insert.ts'
import { writeDetails } from '../../src/store/record-details.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { abandonSweep, claimSweep, createRun, finishSweep, type RunView } from '../../src/store/runs.ts'
import { writeResourceState } from '../../src/store/sync-state.ts'
import { DELIVERY_KIND } from '../../src/sync/delivery/worker.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { insertAcceptedDelivery, markDeliveryProcessed } from '../support/inbox.ts'
import { waitFor } from '../support/process.ts'
import { metricTypes, sampleOf } from '../support/prometheus.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const config = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' })
let boss: JobQueue

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger)
})
afterAll(async () => {
  await boss?.stop({ graceful: false })
})

function metricsWith(overrides: Partial<MetricsSources> = {}) {
  const sources: MetricsSources = {
    db: database.db,
    boss,
    config,
    logger,
    receiverCounters: createReceiverCounters(),
    upstream: createUpstreamMetrics(),
    resourceCountsMaxAgeSeconds: 0,
    processMetrics: false,
    ...overrides,
  }
  return { metrics: createMetrics(sources), sources }
}

const OWN_METRICS = {
  crm_sync_webhook_deliveries_total: 'counter',
  crm_sync_webhook_unauthorized_total: 'counter',
  crm_sync_webhook_previous_secret_total: 'counter',
  crm_sync_hook_checks_total: 'counter',
  crm_sync_hooks_reregistered_total: 'counter',
  crm_sync_inbox_depth: 'gauge',
  crm_sync_inbox_oldest_age_seconds: 'gauge',
  crm_sync_inbox_bytes: 'gauge',
  crm_sync_pruned_rows_total: 'counter',
  crm_sync_queue_jobs: 'gauge',
  crm_sync_jobs_total: 'counter',
  crm_sync_upstream_requests_total: 'counter',
  crm_sync_upstream_retries_total: 'counter',
  crm_sync_upstream_throttled_seconds_total: 'counter',
  crm_sync_records_applied_total: 'counter',
  crm_sync_refreshes_skipped_total: 'counter',
  crm_sync_freshness_seconds: 'histogram',
  crm_sync_live_rows: 'gauge',
  crm_sync_remote_count: 'gauge',
  crm_sync_drift: 'gauge',
  crm_sync_details_current: 'gauge',
  crm_sync_details_due: 'gauge',
  crm_sync_details_reads_total: 'counter',
  crm_sync_details_requests_total: 'counter',
  crm_sync_run_duration_seconds: 'histogram',
  crm_sync_scrape_source_failures_total: 'counter',
  crm_sync_last_success_timestamp_seconds: 'gauge',
  crm_sync_build_info: 'gauge',
  crm_sync_upstream_auth_failing: 'gauge',
}

describe('the registry', () => {
  it('declares every metric with its type, in a registry per instance, beside the process metrics', async () => {
    const first = createMetrics({ ...metricsWith().sources, processMetrics: true })
    const second = createMetrics({ ...metricsWith().sources, processMetrics: true })
    for (const metrics of [first, second]) {
      const types = metricTypes(await metrics.scrape())
      expect(types).toMatchObject(OWN_METRICS)
      expect(types).toMatchObject({
        process_cpu_user_seconds_total: 'counter',
        nodejs_heap_size_used_bytes: 'gauge',
      })
      const own = Object.keys(types).filter((name) => !/^(process|nodejs)_/.test(name))
      expect(own.every((name) => name.startsWith('crm_sync_'))).toBe(true)
    }
  })

  it('is served at GET /metrics in the Prometheus text format', async () => {
    const { metrics } = metricsWith()
    metrics.refreshSkipped?.('crm.people')
    metrics.jobsDone('webhook-delivery', 'completed', 2)
    const response = await createMetricsRoute(metrics).request('/metrics')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await response.text()
    expect(sampleOf(text, 'crm_sync_jobs_total', { kind: 'webhook-delivery', outcome: 'completed' })).toBe(2)
    expect(sampleOf(text, 'crm_sync_refreshes_skipped_total', { resource: 'crm.people' })).toBe(1)
  })
})

describe('counters copied at each scrape', () => {
  it("follows the receiver's delivery and unauthorized counters", async () => {
    const { metrics, sources } = metricsWith()
    const counters = sources.receiverCounters
    counters.deliveries.add({ model: 'person', event: 'update', shape: 'lean', outcome: 'accepted' })
    counters.deliveries.add({ model: 'deal', event: 'destroy', shape: 'unknown', outcome: 'rejected' })
    counters.unauthorized += 3
    let text = await metrics.scrape()
    const accepted = { model: 'person', event: 'update', shape: 'lean', outcome: 'accepted' }
    expect(sampleOf(text, 'crm_sync_webhook_deliveries_total', accepted)).toBe(1)
    expect(sampleOf(text, 'crm_sync_webhook_deliveries_total', { model: 'deal', outcome: 'rejected' })).toBe(
      1,
    )
    expect(sampleOf(text, 'crm_sync_webhook_unauthorized_total')).toBe(3)
    counters.deliveries.add({ model: 'person', event: 'update', shape: 'lean', outcome: 'accepted' }, 4)
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_webhook_deliveries_total', accepted)).toBe(5)
  })

  it('follows deliveries to unknown models and those that carried the previous secret (issue 17)', async () => {
    const { metrics, sources } = metricsWith()
    const counters = sources.receiverCounters
    counters.deliveries.add(
      { model: 'invoice', event: 'update', shape: 'unknown', outcome: 'unknown_model' },
      2,
    )
    counters.previousSecret += 3
    const text = await metrics.scrape()
    const unknown = { model: 'invoice', event: 'update', shape: 'unknown', outcome: 'unknown_model' }
    expect(sampleOf(text, 'crm_sync_webhook_deliveries_total', unknown)).toBe(2)
    expect(sampleOf(text, 'crm_sync_webhook_previous_secret_total')).toBe(3)
  })

  it("follows the API clients' requests, retries and throttled seconds", async () => {
    const { metrics, sources } = metricsWith()
    const { upstream } = sources
    upstream.requests.add({ upstream: 'crm', route: 'people.show', status: '200' }, 7)
    upstream.requests.add({ upstream: 'crm', route: 'people.show', status: '429' })
    upstream.retries.add({ upstream: 'crm', route: 'people.show', reason: '429' })
    upstream.throttledSeconds.add({ upstream: 'crm' }, 2.5)
    let text = await metrics.scrape()
    const ok = { upstream: 'crm', route: 'people.show', status: '200' }
    expect(sampleOf(text, 'crm_sync_upstream_requests_total', ok)).toBe(7)
    expect(sampleOf(text, 'crm_sync_upstream_requests_total', { status: '429' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_upstream_retries_total', { reason: '429' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_upstream_throttled_seconds_total', { upstream: 'crm' })).toBe(2.5)
    upstream.requests.add(ok)
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_upstream_requests_total', ok)).toBe(8)
  })
})

describe('events counted as they happen', () => {
  it('counts jobs by kind and outcome, records applied by resource and source, and freshness', async () => {
    const { metrics } = metricsWith()
    metrics.jobsDone('record-refresh', 'completed', 3)
    metrics.jobsDone('record-refresh', 'failed', 1)
    metrics.recordsApplied('crm.people', 'payload', 1, new Date(Date.now() - 1500))
    metrics.recordsApplied('crm.people', 'fetch', 500)
    metrics.recordsApplied('crm.deals', 'tombstone', 1, new Date(Date.now() - 100))
    const text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_jobs_total', { kind: 'record-refresh', outcome: 'completed' })).toBe(3)
    expect(sampleOf(text, 'crm_sync_jobs_total', { kind: 'record-refresh', outcome: 'failed' })).toBe(1)
    expect(
      sampleOf(text, 'crm_sync_records_applied_total', { resource: 'crm.people', source: 'fetch' }),
    ).toBe(500)
    expect(
      sampleOf(text, 'crm_sync_records_applied_total', { resource: 'crm.deals', source: 'tombstone' }),
    ).toBe(1)
    // only records that came from a delivery have a freshness
    const payload = { resource: 'crm.people', source: 'payload' }
    expect(sampleOf(text, 'crm_sync_freshness_seconds_count', payload)).toBe(1)
    expect(sampleOf(text, 'crm_sync_freshness_seconds_bucket', { ...payload, le: '1' })).toBe(0)
    expect(sampleOf(text, 'crm_sync_freshness_seconds_bucket', { ...payload, le: '2.5' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_freshness_seconds_sum', payload)).toBeGreaterThanOrEqual(1.5)
    expect(sampleOf(text, 'crm_sync_freshness_seconds_count', { source: 'fetch' })).toBeUndefined()
  })

  it("counts the details pass's reads by outcome and its requests", async () => {
    const { metrics } = metricsWith()
    metrics.detailsRead('crm.people', { read: 5, gone: 1, requests: 9 })
    const text = await metrics.scrape()
    const person = { resource: 'crm.people' }
    expect(sampleOf(text, 'crm_sync_details_reads_total', { ...person, outcome: 'read' })).toBe(4)
    expect(sampleOf(text, 'crm_sync_details_reads_total', { ...person, outcome: 'gone' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_details_requests_total', person)).toBe(9)
  })

  it('observes run durations by mode and outcome', async () => {
    const { metrics } = metricsWith()
    const run = (status: 'succeeded' | 'failed', seconds: number): RunView => ({
      id: 1,
      mode: 'full',
      status,
      requested_by: 'test',
      created_at: new Date('2026-01-01T00:00:00Z'),
      started_at: new Date('2026-01-01T00:00:10Z'),
      finished_at: new Date(Date.parse('2026-01-01T00:00:10Z') + seconds * 1000),
      error: null,
      resources: [],
    })
    metrics.runFinished(run('succeeded', 90))
    metrics.runFinished(run('failed', 4))
    const text = await metrics.scrape()
    const succeeded = { mode: 'full', outcome: 'succeeded' }
    expect(sampleOf(text, 'crm_sync_run_duration_seconds_count', succeeded)).toBe(1)
    expect(sampleOf(text, 'crm_sync_run_duration_seconds_sum', succeeded)).toBe(90)
    expect(sampleOf(text, 'crm_sync_run_duration_seconds_bucket', { ...succeeded, le: '60' })).toBe(0)
    expect(sampleOf(text, 'crm_sync_run_duration_seconds_sum', { outcome: 'failed' })).toBe(4)
  })

  it('counts hook checks by outcome and re-registered hooks by reason, each at 0 from the start (issue 17)', async () => {
    const { metrics } = metricsWith()
    let text = await metrics.scrape()
    for (const outcome of ['ok', 'repaired', 'failed'])
      expect(sampleOf(text, 'crm_sync_hook_checks_total', { outcome })).toBe(0)
    for (const reason of ['missing', 'disabled', 'changed'])
      expect(sampleOf(text, 'crm_sync_hooks_reregistered_total', { reason })).toBe(0)
    metrics.hookChecked('ok')
    metrics.hookChecked('repaired')
    metrics.hooksReregistered('disabled', 1)
    metrics.hooksReregistered('missing', 3)
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_hook_checks_total')).toBe(2)
    expect(sampleOf(text, 'crm_sync_hooks_reregistered_total', { reason: 'missing' })).toBe(3)
    expect(sampleOf(text, 'crm_sync_hooks_reregistered_total', { reason: 'disabled' })).toBe(1)
  })

  it('counts the rows retention pruned by table and status', async () => {
    const { metrics } = metricsWith()
    metrics.rowsPruned('sync.inbox', 'processed', 1000)
    metrics.rowsPruned('sync.inbox', 'processed', 12)
    metrics.rowsPruned('sync.runs', 'succeeded', 3)
    const text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_pruned_rows_total', { table: 'sync.inbox', status: 'processed' })).toBe(
      1012,
    )
    expect(sampleOf(text, 'crm_sync_pruned_rows_total', { table: 'sync.runs', status: 'succeeded' })).toBe(3)
  })

  it("names only the sweep whose end finished its run (the run's duration is counted once)", async () => {
    const created = await createRun(
      database.db,
      { mode: 'incremental', resources: ['crm.people', 'crm.deals'], requestedBy: 'test' },
      async () => {},
    )
    if (created.status !== 'created') throw new Error('run refused')
    const { runId } = created
    const end = async (resource: string) => {
      const key = { runId, resource, lease: randomUUID() }
      await claimSweep(database.db, key)
      return finishSweep(database.db, async () => {}, key, { status: 'succeeded' })
    }
    expect(await end('crm.deals')).toEqual({ runEnded: false })
    expect(await end('crm.people')).toEqual({ runEnded: true })
    // Ending a sweep of a finished run again changes nothing, and says so.
    const again = await abandonSweep(database.db, async () => {}, runId, 'crm.people', 'late')
    expect(again).toBeNull()
  })
})

describe('gauges read from the database at each scrape', () => {
  it('follows the inbox: deliveries waiting and the age of the oldest', async () => {
    const { metrics } = metricsWith()
    expect(sampleOf(await metrics.scrape(), 'crm_sync_inbox_depth')).toBe(0)
    expect(sampleOf(await metrics.scrape(), 'crm_sync_inbox_oldest_age_seconds')).toBe(0)
    const delivery = {
      model: 'person',
      event: 'update',
      shape: 'lean',
      record_id: 1,
      payload: '{}',
      body: null,
    }
    const ids = [
      await insertAcceptedDelivery(database.db, { ...delivery, reason: null }),
      await insertAcceptedDelivery(database.db, { ...delivery, reason: null }),
    ]
    let text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_inbox_depth')).toBe(2)
    expect(sampleOf(text, 'crm_sync_inbox_oldest_age_seconds')).toBeGreaterThanOrEqual(0)
    for (const id of ids) await markDeliveryProcessed(database.db, id)
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_inbox_depth')).toBe(0)
  })

  it("follows the inbox's size on disk", async () => {
    const { metrics } = metricsWith()
    const before = sampleOf(await metrics.scrape(), 'crm_sync_inbox_bytes') ?? 0
    expect(before).toBeGreaterThan(0) // its indexes, at least
    // A rejected body near the limit, random so that compression cannot hide it.
    const body = randomBytes(384 * 1024).toString('base64')
    await insertRejectedDelivery(database.db, {
      model: null,
      event: null,
      shape: null,
      record_id: null,
      payload: null,
      body,
      reason: 'not JSON',
    })
    expect(sampleOf(await metrics.scrape(), 'crm_sync_inbox_bytes')).toBeGreaterThanOrEqual(
      before + 384 * 1024,
    )
  })

  it('follows the queues as pg-boss counts them', async () => {
    const counts = { queuedCount: 0, activeCount: 0, failedCount: 0 }
    const counting = {
      getQueueStats: async (name: string) => [{ name, capturedOn: new Date(), ...counts }],
    } as unknown as JobQueue
    const { metrics } = metricsWith({ boss: counting })
    const refresh = { queue: QUEUES.refresh.name }
    let text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_queue_jobs', { ...refresh, state: 'queued' })).toBe(0)
    // Deliveries wait in the inbox (crm_sync_inbox_depth), not in a pg-boss queue.
    expect(sampleOf(text, 'crm_sync_queue_jobs', { queue: DELIVERY_KIND, state: 'queued' })).toBeUndefined()
    Object.assign(counts, { queuedCount: 12, activeCount: 4, failedCount: 1 })
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_queue_jobs', { ...refresh, state: 'queued' })).toBe(12)
    expect(sampleOf(text, 'crm_sync_queue_jobs', { ...refresh, state: 'active' })).toBe(4)
    expect(sampleOf(text, 'crm_sync_queue_jobs', { queue: QUEUES.sweep.name, state: 'failed' })).toBe(1)
    // and from the real pg-boss
    const real = await metricsWith().metrics.scrape()
    expect(sampleOf(real, 'crm_sync_queue_jobs', { ...refresh, state: 'queued' })).toEqual(expect.any(Number))
  })

  it('reports live rows, the last remote count and their difference (drift) per resource', async () => {
    const { metrics } = metricsWith()
    const person = { resource: 'crm.people' }
    let text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_live_rows', person)).toBe(0)
    expect(sampleOf(text, 'crm_sync_drift', person)).toBeUndefined() // never counted upstream
    await writeResourceState(database.db, 'crm.people', { last_remote_count: 5 })
    const fetched = { source: 'fetch' as const, fetchedAt: new Date() }
    const record = (id: number) => ({ id, updated_at: '2022-12-14T15:53:43.000+01:00' })
    await upsertRecords(database.db, people, [record(1), record(2), record(3)], fetched)
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_live_rows', person)).toBe(3)
    expect(sampleOf(text, 'crm_sync_remote_count', person)).toBe(5)
    expect(sampleOf(text, 'crm_sync_drift', person)).toBe(2)
    await upsertRecords(database.db, people, [record(4), record(5)], fetched)
    expect(sampleOf(await metrics.scrape(), 'crm_sync_drift', person)).toBe(0)
    expect(sampleOf(text, 'crm_sync_live_rows', { resource: 'reservations.contacts' })).toBeUndefined()
    // None of these people's details has been read yet.
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_details_due', { ...person, reason: 'new' })).toBe(5)
    expect(sampleOf(text, 'crm_sync_details_current', person)).toBe(0)
    await writeDetails(database.db, people, 1, { lists: [], readAt: new Date(), readFor: null })
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_details_due', { ...person, reason: 'new' })).toBe(4)
    expect(sampleOf(text, 'crm_sync_details_due', { ...person, reason: 'changed' })).toBe(1)
  })

  it('says which version runs, and when each resource last swept successfully, whoever swept it', async () => {
    const { metrics } = metricsWith()
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'))
    let text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_build_info', { version, node: process.version })).toBe(1)
    const deals = { resource: 'crm.deals', mode: 'full' }
    expect(sampleOf(text, 'crm_sync_last_success_timestamp_seconds', deals)).toBeUndefined()
    const at = new Date('2026-11-25T12:00:00Z')
    await writeResourceState(database.db, 'crm.deals', {
      last_full_sync_at: at,
      last_incremental_sync_at: at,
    })
    text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_last_success_timestamp_seconds', deals)).toBe(at.getTime() / 1000)
    expect(
      sampleOf(text, 'crm_sync_last_success_timestamp_seconds', {
        resource: 'crm.deals',
        mode: 'incremental',
      }),
    ).toBe(at.getTime() / 1000)
  })

  it('counts live rows at most once per max age, however often it is scraped', async () => {
    const { metrics } = metricsWith({ resourceCountsMaxAgeSeconds: 3600 })
    const before = sampleOf(await metrics.scrape(), 'crm_sync_live_rows', { resource: 'crm.people' }) ?? 0
    const fetched = { source: 'fetch' as const, fetchedAt: new Date() }
    await upsertRecords(database.db, people, [{ id: 99, updated_at: '2022-12-14T15:53:43Z' }], fetched)
    expect(sampleOf(await metrics.scrape(), 'crm_sync_live_rows', { resource: 'crm.people' })).toBe(before)
  })

  it('drops the series of a source it cannot read, counts the failure, and still answers', async () => {
    const broken = {
      getQueueStats: async () => {
        throw new Error('connection terminated')
      },
    } as unknown as JobQueue
    const { metrics } = metricsWith({ boss: broken })
    const text = await metrics.scrape()
    expect(sampleOf(text, 'crm_sync_queue_jobs')).toBeUndefined()
    expect(sampleOf(text, 'crm_sync_scrape_source_failures_total', { source: 'queues' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_inbox_depth')).toEqual(expect.any(Number))
  })
})

describe('the running service', () => {
  let sandbox: Sandbox | undefined
  let engine: Engine | undefined
  let own: TestDatabase | undefined
  afterEach(async () => {
    await engine?.stop()
    await sandbox?.stop()
    if (own) await dropTestDatabase(own)
  })

  it('moves the metrics as deliveries, refreshes and sweeps happen', async () => {
    sandbox = await startSandbox({ seedSize: 10, behaviour: { crmRateLimit: null } })
    own = await createTestDatabase()
    engine = await startEngine(sandbox, own.url, { HOOK_OBJECT_TYPE: 'lean' })
    const upstream = sandbox
    await waitFor(
      async () => (upstream.control.crm.hooks().length === 12 ? true : undefined),
      15_000,
      'hooks',
    )
    // One delivery, one refresh: a show (two refreshes of a resource waiting would be answered by an
    // index page instead, see catch-up.ts).
    upstream.control.crm.create('people', { name: 'Mustermann' })
    await upstream.control.drainDeliveries()

    const url = `http://127.0.0.1:${engine.port}/metrics`
    const expectations: [string, Record<string, string>][] = [
      [
        'crm_sync_webhook_deliveries_total',
        { model: 'person', event: 'create', shape: 'lean', outcome: 'accepted' },
      ],
      ['crm_sync_jobs_total', { kind: DELIVERY_KIND, outcome: 'completed' }],
      ['crm_sync_jobs_total', { kind: QUEUES.refresh.name, outcome: 'completed' }],
      ['crm_sync_jobs_total', { kind: QUEUES.sweep.name, outcome: 'completed' }],
      ['crm_sync_records_applied_total', { resource: 'crm.people', source: 'fetch' }],
      ['crm_sync_freshness_seconds_count', { resource: 'crm.people', source: 'fetch' }],
      ['crm_sync_upstream_requests_total', { upstream: 'crm', route: 'people.show', status: '200' }],
      ['crm_sync_upstream_requests_total', { upstream: 'crm', route: 'people.index', status: '200' }],
      ['crm_sync_run_duration_seconds_count', { mode: 'incremental', outcome: 'succeeded' }],
    ]
    const text = await waitFor(
      async () => {
        const body = await (await fetch(url)).text()
        return expectations.every(([name, labels]) => (sampleOf(body, name, labels) ?? 0) > 0)
          ? body
          : undefined
      },
      30_000,
      'every metric to move',
    )
    // live rows are counted at most every 30 s by default: present, though maybe from the first scrape
    expect(sampleOf(text, 'crm_sync_live_rows', { resource: 'crm.people' })).toEqual(expect.any(Number))
    expect(sampleOf(text, 'crm_sync_inbox_depth')).toEqual(expect.any(Number))
    expect(sampleOf(text, 'process_resident_memory_bytes')).toBeGreaterThan(0)
  })
})
