// Periodic hook checks (issue 17): hooks deleted, disabled or changed in the CRM are re-registered; a
// check costs one hooks index request when all is well; /readyz and the metrics show the checks; and
// replicas share one check per interval through pg-boss. Against the sandbox (and nock for a disabled
// hook, which the sandbox cannot show), on a real database.
import nock from 'nock'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { type CrmClient, createCrmClient, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { total, type UpstreamMetrics } from '../../src/api-client/metrics.ts'
import { parseConfig } from '../../src/config/index.ts'
import { type HookKeeper, keepHooksRegistered } from '../../src/hooks/keeper.ts'
import { desiredHooks, isDisabled, registerHooks } from '../../src/hooks/registration.ts'
import { createHttpApp } from '../../src/http/app.ts'
import { createLogger } from '../../src/log.ts'
import { createMetrics, type Metrics } from '../../src/metrics/index.ts'
import { createReceiverCounters } from '../../src/receiver/counters.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { CRM_URL, crmClient } from '../api-client/harness.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { sampleOf } from '../support/prometheus.ts'
import { SECRET } from '../support/receiver.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const settings = { publicUrl: 'https://sync.example.com', secret: SECRET, objectType: 'lean' as const }
const ADMIN_TOKEN = 'admin-token-0123456789'
let sandbox: Sandbox
let upstream: UpstreamMetrics
let crm: CrmClient
let boss: JobQueue
const keepers: HookKeeper[] = []

beforeAll(async () => {
  sandbox = await startSandbox({ behaviour: { crmRateLimit: null } })
  upstream = createUpstreamMetrics()
  crm = createCrmClient(
    {
      baseUrl: sandbox.crmUrl,
      apiKey: sandbox.crmApiKey,
      auth: 'header',
      requests: 10_000,
      windowSeconds: 10,
      timeoutSeconds: 10,
      maxRetries: 0,
      pageSize: 500,
      maxPages: 100,
    },
    { db: database.db, logger, metrics: upstream },
  )
  boss = await startJobQueue(database.url, logger)
})
afterAll(async () => {
  await boss?.stop({ graceful: false })
  await sandbox?.stop()
})
beforeEach(async () => {
  sandbox.control.resetFaults()
  for (const hook of await crm.listHooks()) await crm.deleteHook(hook.id)
})
afterEach(() => {
  for (const keeper of keepers.splice(0)) keeper.stop()
})

const requests = (route: string) => total(upstream.requests, { route })

function metrics(): Metrics {
  const config = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' })
  const sources = { db: database.db, boss, config, logger, receiverCounters: createReceiverCounters() }
  return createMetrics({ ...sources, upstream: createUpstreamMetrics(), processMetrics: false })
}

async function registeredKeeper(options: Parameters<typeof keepHooksRegistered>[4] = {}) {
  const keeper = keepHooksRegistered(database.db, crm, settings, logger, options)
  keepers.push(keeper)
  await waitFor(async () => (keeper.status().state === 'registered' ? true : undefined), 10_000, 'hooks')
  return keeper
}

describe('a hook check', () => {
  it('costs one hooks index request when every hook is in place, and changes nothing', async () => {
    const observed = metrics()
    const keeper = await registeredKeeper({ observer: observed })
    const before = { index: requests('hooks.index'), create: requests('hooks.create') }
    await keeper.check()
    expect(requests('hooks.index')).toBe(before.index + 1)
    expect(requests('hooks.create')).toBe(before.create)
    expect(requests('hooks.delete')).toBe(0)
    expect(keeper.status()).toMatchObject({ state: 'registered', last_check: { outcome: 'ok' } })
    const text = await observed.scrape()
    expect(sampleOf(text, 'crm_sync_hook_checks_total', { outcome: 'ok' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_hooks_reregistered_total')).toBe(0)
  })

  it('re-registers hooks deleted in the CRM, and counts them', async () => {
    const observed = metrics()
    const keeper = await registeredKeeper({ observer: observed })
    const [first, second] = sandbox.control.crm.hooks() as { id: number }[]
    await crm.deleteHook(first?.id as number)
    await crm.deleteHook(second?.id as number)
    await keeper.check()
    expect(await crm.listHooks()).toHaveLength(12)
    expect(keeper.status()).toMatchObject({
      state: 'registered',
      created: 2,
      kept: 10,
      last_check: { outcome: 'repaired', reregistered: { missing: 2, disabled: 0, changed: 0 } },
    })
    const text = await observed.scrape()
    expect(sampleOf(text, 'crm_sync_hook_checks_total', { outcome: 'repaired' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_hooks_reregistered_total', { reason: 'missing' })).toBe(2)
  })

  it('shows in /readyz: a check that failed, then one that repaired the hooks', async () => {
    const observed = metrics()
    const keeper = await registeredKeeper({ observer: observed })
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: 0,
      reports: { hooks: keeper.status },
      adminToken: ADMIN_TOKEN,
    })
    const hooksReport = async () => {
      const response = await app.request('/readyz', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      return ((await response.json()) as { reports: { hooks: Record<string, unknown> } }).reports.hooks
    }
    const registeredAt = (keeper.status() as { at: string }).at
    sandbox.control.setFaults({ crm: { errorRate: 1 } })
    await keeper.check()
    expect(await hooksReport()).toMatchObject({
      state: 'check_failed',
      registered_at: registeredAt,
      last_check: { outcome: 'failed', error: expect.stringMatching(/500/) },
    })
    sandbox.control.resetFaults()
    await crm.deleteHook((sandbox.control.crm.hooks()[0] as { id: number }).id)
    await keeper.check()
    expect(await hooksReport()).toMatchObject({
      state: 'registered',
      created: 1,
      last_check: { outcome: 'repaired', reregistered: { missing: 1 } },
    })
    const text = await observed.scrape()
    expect(sampleOf(text, 'crm_sync_hook_checks_total', { outcome: 'failed' })).toBe(1)
    expect(sampleOf(text, 'crm_sync_hook_checks_total', { outcome: 'repaired' })).toBe(1)
  })
})

describe('a disabled hook', () => {
  afterEach(() => {
    nock.cleanAll()
  })

  it('is recognised in the forms services use; failures alone are no such sign', () => {
    const hook = { id: 1, model: 'person', event: 'update', target_url: null, object_type: 'lean' }
    for (const sign of [
      { active: false },
      { enabled: false },
      { disabled: true },
      { status: 'disabled' },
      { state: 'Inactive' },
      { disabled_at: '2025-03-03T10:00:00.000+01:00' },
    ])
      expect(isDisabled({ ...hook, ...sign } as never), JSON.stringify(sign)).toBe(true)
    for (const fine of [{}, { active: true, failed: 12, failed_at: '2025-03-03', verified: false }])
      expect(isDisabled({ ...hook, ...fine } as never), JSON.stringify(fine)).toBe(false)
  })

  it('is replaced: a new hook first, then the disabled one deleted', async () => {
    const listed = desiredHooks(settings).map((hook, index) => ({
      hook: { ...hook, id: 100 + index, model: hook.model[0]?.toUpperCase() + hook.model.slice(1) },
    }))
    ;(listed[4] as { hook: Record<string, unknown> }).hook.active = false
    const calls: string[] = []
    nock(CRM_URL)
      .get('/api/hooks')
      .reply(200, listed)
      .post('/api/hooks', (body: { hook: { model: string; event: string } }) => {
        calls.push(`create ${body.hook.model}:${body.hook.event}`)
        return true
      })
      .reply(200, { hook: { id: 200 } })
      .delete('/api/hooks/104')
      .reply(200, () => {
        calls.push('delete 104')
        return ''
      })
    const { client } = crmClient(database.db)
    const result = await registerHooks(database.db, client, settings)
    const wanted = desiredHooks(settings)[4]
    expect(calls).toEqual([`create ${wanted?.model}:${wanted?.event}`, 'delete 104'])
    expect(result).toMatchObject({ kept: expect.any(Array), created: [wanted] })
    expect(result.kept).toHaveLength(11)
    expect(nock.isDone()).toBe(true)
  })
})

describe('scheduled checks', () => {
  it('run once per interval among replicas, from pg-boss, and bring back a deleted hook', async () => {
    const other = await startJobQueue(database.url, logger)
    try {
      const intervalSeconds = 2
      const observers = [metrics(), metrics()]
      const startedAt = Date.now()
      const indexBefore = requests('hooks.index')
      const replicas = await Promise.all(
        [boss, other].map((queue, index) =>
          registeredKeeper({ checks: { boss: queue, intervalSeconds }, observer: observers[index] }),
        ),
      )
      await crm.deleteHook((sandbox.control.crm.hooks()[0] as { id: number }).id)
      const repaired = () =>
        replicas.some((keeper) => {
          const status = keeper.status()
          return status.state === 'registered' && status.last_check?.outcome === 'repaired'
        })
      await waitFor(async () => (repaired() ? true : undefined), 15_000, 'a scheduled check to repair')
      expect(sandbox.control.crm.hooks()).toHaveLength(12)
      const checksRun = async () => {
        const counted = await Promise.all(
          observers.map(
            async (observed) => sampleOf(await observed.scrape(), 'crm_sync_hook_checks_total') ?? 0,
          ),
        )
        return counted.reduce((sum, count) => sum + count, 0)
      }
      // A few more slots, then the checks stop and the one under way (if any) ends.
      await waitFor(
        async () => ((await checksRun()) >= 3 ? true : undefined),
        15_000,
        'three scheduled checks',
      )
      const stoppedAt = Date.now()
      for (const keeper of keepers.splice(0)) keeper.stop()
      await waitFor(
        async () => {
          const jobs = await boss.findJobs(QUEUES.hooksCheck.name)
          return jobs.some((job) => job.state === 'active') ? undefined : true
        },
        10_000,
        'the check under way to end',
      )
      const checks = await checksRun()
      // Offers start one interval after the start; each slot of the interval lets one check through.
      const slot = (time: number) => Math.floor(time / 1000 / intervalSeconds)
      const slots = slot(stoppedAt) - slot(startedAt + intervalSeconds * 1000) + 1
      // pg-boss took one offer per slot, whichever replica made it, and refused the others.
      const jobs = await boss.findJobs(QUEUES.hooksCheck.name)
      expect(jobs.length).toBeLessThanOrEqual(slots)
      expect(new Set(jobs.map((job) => job.singletonOn?.getTime())).size).toBe(jobs.length)
      expect(checks).toBeGreaterThanOrEqual(2)
      expect(checks).toBeLessThanOrEqual(jobs.length)
      // The two registrations at start, then one index request per check, the repairing one included.
      expect(requests('hooks.index') - indexBefore).toBe(2 + checks)
      expect(requests('hooks.create')).toBeGreaterThan(0)
    } finally {
      for (const keeper of keepers.splice(0)) keeper.stop()
      await other.stop({ graceful: false })
    }
  })
})
