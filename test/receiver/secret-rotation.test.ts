// The running service during a rotation of WEBHOOK_SECRET (issue 17): hooks of the previous secret are
// replaced by hooks of the new one, deliveries carrying either secret are taken meanwhile, and the
// periodic check (HOOKS_CHECK_INTERVAL) brings back a hook deleted in the CRM; /readyz and /metrics
// show it. Against the sandbox, on a database of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createCrmClient, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { registerHooks } from '../../src/hooks/registration.ts'
import { createLogger } from '../../src/log.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { sampleOf } from '../support/prometheus.ts'

const PREVIOUS = 'previous-secret-0123456789'
const CURRENT = 'current-secret-0123456789'
const ADMIN_TOKEN = 'admin-token-0123456789'
let sandbox: Sandbox
let own: TestDatabase
let engine: Engine | undefined

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null } })
  own = await createTestDatabase()
})
afterAll(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (own) await dropTestDatabase(own)
})

const targets = () => sandbox.control.crm.hooks().map((hook) => String(hook.target_url))

async function readyzHooks(): Promise<Record<string, unknown>> {
  const response = await fetch(`${engine?.publicUrl}/readyz`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  return ((await response.json()) as { reports: { hooks: Record<string, unknown> } }).reports.hooks
}

const deliver = (secret: string) =>
  fetch(`${engine?.publicUrl}/webhooks/crm/${secret}/person/update`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'person', event: 'update', record_id: 4711 }),
  })

describe('a rotation of WEBHOOK_SECRET in the running service', () => {
  it('moves the hooks to the new secret, takes both meanwhile, and keeps the hooks by checking them', async () => {
    const logger = createLogger({ level: 'silent' })
    const crm = createCrmClient(
      {
        baseUrl: sandbox.crmUrl,
        apiKey: sandbox.crmApiKey,
        auth: 'header',
        requests: 1000,
        windowSeconds: 10,
        timeoutSeconds: 10,
        maxRetries: 1,
        pageSize: 500,
        maxPages: 10,
      },
      { db: own.db, logger, metrics: createUpstreamMetrics() },
    )
    // What the previous configuration registered.
    await registerHooks(own.db, crm, {
      publicUrl: 'http://127.0.0.1:9',
      secret: PREVIOUS,
      objectType: 'lean',
    })
    engine = await startEngine(sandbox, own.url, {
      WEBHOOK_SECRET: CURRENT,
      WEBHOOK_SECRET_PREVIOUS: PREVIOUS,
      HOOKS_CHECK_INTERVAL: '10',
      ADMIN_TOKEN,
    })
    const registered = await waitFor(
      async () => {
        const hooks = await readyzHooks()
        return hooks.state === 'registered' ? hooks : undefined
      },
      15_000,
      'hooks registered',
    )
    expect(registered).toMatchObject({ created: 12, deleted: 12 })
    expect(targets()).toHaveLength(12)
    expect(targets().every((target) => target.includes(`/webhooks/crm/${CURRENT}/`))).toBe(true)

    expect((await deliver(PREVIOUS)).status).toBe(200)
    expect((await deliver(CURRENT)).status).toBe(200)
    expect((await deliver('another-secret-0123456789')).status).toBe(401)

    const [gone] = sandbox.control.crm.hooks() as { id: number }[]
    await crm.deleteHook(gone?.id as number)
    const repaired = await waitFor(
      async () => {
        const hooks = await readyzHooks()
        return (hooks.last_check as { outcome?: string } | undefined)?.outcome === 'repaired'
          ? hooks
          : undefined
      },
      30_000,
      'the periodic check to re-register the deleted hook',
    )
    expect(repaired).toMatchObject({ state: 'registered', last_check: { reregistered: { missing: 1 } } })
    expect(targets()).toHaveLength(12)

    const metrics = await (await fetch(`${engine.publicUrl}/metrics`)).text()
    expect(sampleOf(metrics, 'crm_sync_webhook_previous_secret_total')).toBe(1)
    expect(sampleOf(metrics, 'crm_sync_hook_checks_total', { outcome: 'repaired' })).toBe(1)
    expect(sampleOf(metrics, 'crm_sync_hooks_reregistered_total', { reason: 'missing' })).toBe(1)
    expect(sampleOf(metrics, 'crm_sync_webhook_unauthorized_total')).toBe(1)
  })
})
