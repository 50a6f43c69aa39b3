// Logs: the level from LOG_LEVEL; secrets never in a line (by field name, by value in any form,
// and in the places URLs carry them); every line of a job carries its job id, resource and record id.
import { Writable } from 'node:stream'
import type { Job } from 'pg-boss'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { createUpstreamClients, createUpstreamMetrics } from '../src/api-client/index.ts'
import { type Config, parseConfig } from '../src/config/index.ts'
import { freePort } from '../src/database/free-port.ts'
import { configSecrets, createLogger, MASK, secretScrubber, withLogContext } from '../src/log.ts'
import { type Running, start } from '../src/service.ts'
import { createPool } from '../src/store/database.ts'
import { createRun } from '../src/store/runs.ts'
import { createInboxDrain } from '../src/sync/delivery/worker.ts'
import { type JobQueue, startJobQueue } from '../src/sync/job-queue.ts'
import { createRefreshHandler } from '../src/sync/refresh/handler.ts'
import { sweepDepsFrom } from '../src/sync/sweep/deps.ts'
import { createSweepHandler } from '../src/sync/sweep/handler.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  type TestDatabase,
  useTestDatabase,
} from './support/database.ts'
import { insertAcceptedDelivery } from './support/inbox.ts'
import { waitFor } from './support/process.ts'

const database = useTestDatabase()

/** A logger writing into an array of lines; `records()` parses them (and so proves each is JSON). */
function capture(options: { level?: string; secrets?: string[] } = {}) {
  const lines: string[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const logger = createLogger({ level: options.level ?? 'trace', destination, secrets: options.secrets })
  const records = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>)
  return { logger, lines, records }
}

// Only what a secret is; the characters that URL and JSON encoding change included.
const API_KEY = 'crm-key+0123/456789'
const WEBHOOK_SECRET = 'hook-secret_0123456789'
const ADMIN_TOKEN = 'admin-token-0123456789'
const PASSWORD = 'p@ss"word/0123'

function forms(secret: string): string[] {
  return [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)]
}

function expectNoSecret(lines: string[], secrets: string[]) {
  for (const line of lines) {
    for (const secret of secrets) {
      for (const form of forms(secret)) expect(line, `a line contains ${form}`).not.toContain(form)
      expect(line).not.toContain(JSON.stringify(secret).slice(1, -1))
    }
  }
}

describe('the level', () => {
  it('comes from LOG_LEVEL', () => {
    const base = { CRM_BASE_URL: 'http://127.0.0.1:1', CRM_API_KEY: 'unused-key' }
    for (const level of ['warn', 'debug', 'silent'] as const) {
      const config = parseConfig({ ...base, LOG_LEVEL: level })
      const { logger } = capture({ level: config.logLevel })
      expect(logger.level).toBe(level)
    }
    const { logger, records } = capture({ level: parseConfig({ ...base, LOG_LEVEL: 'warn' }).logLevel })
    logger.info('not shown')
    logger.warn('shown')
    expect(records().map((record) => record.msg)).toEqual(['shown'])
  })
})

describe('secrets', () => {
  const config = parseConfig({
    CRM_BASE_URL: 'http://127.0.0.1:1',
    CRM_API_KEY: API_KEY,
    RESERVATION_BASE_URL: 'http://127.0.0.1:2',
    RESERVATION_API_KEY: 'reservation-key-0123456789',
    PUBLIC_URL: 'https://sync.example.com',
    WEBHOOK_SECRET,
    ADMIN_TOKEN,
    DATABASE_URL: `postgres://crm:${encodeURIComponent(PASSWORD)}@db.example.com/crm`,
  })
  const secrets = configSecrets(config)

  it('are every credential of the configuration', () => {
    expect(secrets).toEqual(
      expect.arrayContaining([API_KEY, 'reservation-key-0123456789', WEBHOOK_SECRET, ADMIN_TOKEN, PASSWORD]),
    )
  })

  it('never reach a line, wherever they are: message, fields, bindings, errors, URLs', () => {
    const { logger, lines, records } = capture({ secrets })
    const target = `https://sync.example.com/webhooks/crm/${WEBHOOK_SECRET}/person/create`
    logger.info({ target }, 'hook registered')
    logger.info(`registered ${target}`)
    logger.warn(
      { url: `http://crm.example.com/api/people?apikey=${encodeURIComponent(API_KEY)}&page=2` },
      'slow',
    )
    logger.warn({ url: `http://crm.example.com/api/people?apikey=${API_KEY}` }, 'raw in a query')
    logger.error({ err: new Error(`the CRM refused key ${API_KEY}`) }, 'request failed')
    logger.info({ nested: { deeper: { list: [`Bearer ${ADMIN_TOKEN}`] } } }, 'nested')
    logger.info({ headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-apikey': API_KEY } }, 'headers')
    logger.child({ database: config.databaseUrl }).info('database configured')
    logger.info({ apiKey: 'short', token: 'tiny', secret: 'abc' }, 'by field name, whatever the length')
    logger.info({ body: JSON.stringify({ password: PASSWORD }) }, 'escaped inside a JSON string')
    expectNoSecret(lines, secrets)
    const all = records() // still JSON, line by line
    expect(all[0]?.target).toBe(`https://sync.example.com/webhooks/crm/${MASK}/person/create`)
    expect(all[2]?.url).toBe(`http://crm.example.com/api/people?apikey=${MASK}&page=2`)
    expect(all[8]).toMatchObject({ apiKey: '[redacted]', token: '[redacted]', secret: '[redacted]' })
    expect(lines.join('\n')).not.toMatch(/short|tiny/)
  })

  it('are masked in URLs even when they are not configured (an old hook, another key)', () => {
    const scrub = secretScrubber([])
    expect(scrub('"https://x.example/webhooks/crm/old-secret-value/deal/update"')).toBe(
      `"https://x.example/webhooks/crm/${MASK}/deal/update"`,
    )
    expect(scrub('GET /api/people?page=1&apikey=abc%2Bdef&perpage=500')).toBe(
      `GET /api/people?page=1&apikey=${MASK}&perpage=500`,
    )
    expect(scrub('?api_key=a&token=b&secret=c&password=d')).toBe(
      `?api_key=${MASK}&token=${MASK}&secret=${MASK}&password=${MASK}`,
    )
    expect(scrub('Authorization: Bearer eyJhbGciOi.x.y')).toBe(`Authorization: Bearer ${MASK}`)
  })

  it('include WEBHOOK_SECRET_PREVIOUS during a rotation, scrubbed like the current one (issue 17)', () => {
    const PREVIOUS = 'previous-hook-secret_0123456789'
    const rotating = configSecrets(
      parseConfig({
        CRM_BASE_URL: 'http://127.0.0.1:1',
        CRM_API_KEY: API_KEY,
        PUBLIC_URL: 'https://sync.example.com',
        WEBHOOK_SECRET,
        WEBHOOK_SECRET_PREVIOUS: PREVIOUS,
      }),
    )
    expect(rotating).toEqual(expect.arrayContaining([WEBHOOK_SECRET, PREVIOUS]))
    const { logger, lines, records } = capture({ secrets: rotating })
    logger.error({ err: new Error(`no hook for ${PREVIOUS}`) }, `the old secret ${PREVIOUS} in a message`)
    logger.info({ detail: { value: PREVIOUS }, webhookSecretPrevious: PREVIOUS }, 'in fields')
    expectNoSecret(lines, [PREVIOUS])
    expect(records()[1]).toMatchObject({ detail: { value: MASK }, webhookSecretPrevious: '[redacted]' })
  })

  it('leave a short configured secret to the field names, so that lines stay JSON', () => {
    const { logger, records } = capture({ secrets: ['1', 'true', 'abc'] })
    logger.info({ count: 1, ok: true, name: 'abc' }, 'ordinary values')
    expect(records()[0]).toMatchObject({ count: 1, ok: true, name: 'abc' })
  })
})

describe('errors', () => {
  it('are logged without the library objects they carry (a pg client and its cancel key)', async () => {
    const { logger, lines, records } = capture()
    const pool = createPool('postgres://nobody@127.0.0.1:1/none')
    const failure = await pool.query('select 1').catch((error: unknown) => error as Error)
    // What pg hands back from a broken connection: the error, with its client attached.
    const client = { processID: 4242, secretKey: 987654321, connectionParameters: { host: 'db' } }
    Object.assign(failure, { client })
    logger.error({ err: failure }, 'the database went away')
    await pool.end()
    const [line] = records()
    expect(line?.err).toMatchObject({ type: 'Error', message: expect.stringContaining('ECONNREFUSED') })
    expect(lines.join('\n')).not.toContain('987654321')
  })
})

describe('the log context of a job', () => {
  it('adds its fields to every line inside it, of any logger, without doubling bound keys', async () => {
    const { logger, lines, records } = capture()
    const child = logger.child({ queue: 'record-refresh', resource: 'crm.people' })
    await withLogContext({ jobId: 'j1', resource: 'crm.people' }, async () => {
      logger.info('root logger')
      await withLogContext({ recordId: 42 }, async () => child.info('child logger, nested context'))
    })
    logger.info('outside')
    expect(records()).toMatchObject([
      { jobId: 'j1', resource: 'crm.people', msg: 'root logger' },
      { jobId: 'j1', resource: 'crm.people', recordId: 42, queue: 'record-refresh' },
      { msg: 'outside' },
    ])
    expect(records()[2]).not.toHaveProperty('jobId')
    expect(lines[1]?.match(/"resource"/g)).toHaveLength(1)
  })

  it('keeps concurrent jobs apart', async () => {
    const { logger, records } = capture()
    const job = (jobId: string, wait: number) =>
      withLogContext({ jobId }, async () => {
        await new Promise((resolve) => setImmediate(resolve))
        for (let i = 0; i < wait; i++) await Promise.resolve()
        logger.info({ expected: jobId }, 'done')
      })
    await Promise.all([job('a', 3), job('b', 1), job('c', 2)])
    for (const record of records()) expect(record.jobId).toBe(record.expected)
  })
})

describe('the lines of each job kind', () => {
  let sandbox: Sandbox
  let boss: JobQueue
  let config: Config
  beforeAll(async () => {
    sandbox = await startSandbox({ seedSize: { people: 3, companies: 3 }, behaviour: { crmRateLimit: null } })
    boss = await startJobQueue(database.url, createLogger({ level: 'silent' }))
    config = parseConfig({ CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey, LOG_LEVEL: 'trace' })
  })
  afterAll(async () => {
    await boss?.stop({ graceful: false })
    await sandbox?.stop()
  })

  const everyLine = (records: Record<string, unknown>[], fields: Record<string, unknown>) => {
    expect(records.length).toBeGreaterThan(0)
    for (const record of records) expect(record).toMatchObject(fields)
  }

  it('a refresh: job id, resource and record id, the API client lines included', async () => {
    const { logger, records } = capture()
    const [id] = sandbox.control.crm.liveIds('people') as number[]
    const clients = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    const handle = createRefreshHandler({ db: database.db, clients, logger, queueChecks: async () => {} })
    await handle([{ id: 'refresh-1', data: { resource: 'crm.people', id } } as Job<unknown>])
    expect(records().map((record) => record.msg)).toEqual(
      expect.arrayContaining(['upstream request', 'record refreshed']),
    )
    everyLine(records(), { jobId: 'refresh-1', resource: 'crm.people', recordId: id })
  })

  it('a delivery: inbox id, resource and record id on every line about it', async () => {
    const { logger, records } = capture()
    const inboxIds: number[] = []
    for (const recordId of [77, 78]) {
      inboxIds.push(
        await insertAcceptedDelivery(database.db, {
          model: 'person',
          event: 'update',
          shape: 'lean',
          record_id: recordId,
          payload: JSON.stringify({ model: 'person', event: 'update', record_id: recordId }),
          body: null,
          reason: null,
        }),
      )
    }
    const drain = createInboxDrain({ db: database.db, boss, logger, refreshCoalesceSeconds: 5 })
    expect(await drain.drainOnce()).toBe(2)
    const about = (recordId: number) =>
      records().filter((record) => record.msg === 'delivery processed' && record.recordId === recordId)
    expect(about(77)).toEqual([
      expect.objectContaining({ resource: 'crm.people', inboxId: inboxIds[0], outcome: 'refresh queued' }),
    ])
    expect(about(78)).toEqual([
      expect.objectContaining({ resource: 'crm.people', inboxId: inboxIds[1], outcome: 'refresh queued' }),
    ])
  })

  it('a sweep: job id, resource and run id, the API client lines included', async () => {
    const { logger, records } = capture()
    const run = await createRun(
      database.db,
      { mode: 'full', resources: ['crm.companies'], requestedBy: 'test' },
      async () => {},
    )
    if (run.status !== 'created') throw new Error('run refused')
    const deps = sweepDepsFrom(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
      enqueue: async () => {},
      queueChecks: async () => {},
    })
    const job = { id: 'sweep-1', data: { runId: run.runId, resource: 'crm.companies' } }
    await createSweepHandler(deps)([{ ...job, signal: new AbortController().signal }])
    expect(records().map((record) => record.msg)).toEqual(
      expect.arrayContaining(['upstream request', 'sweep finished']),
    )
    everyLine(records(), { jobId: 'sweep-1', resource: 'crm.companies', runId: run.runId })
  })
})

describe('the running service', () => {
  let sandbox: Sandbox | undefined
  let running: Running | undefined
  let own: TestDatabase | undefined
  afterEach(async () => {
    await running?.stop()
    await sandbox?.stop()
    if (own) await dropTestDatabase(own)
  })

  it('writes no secret in any line at trace level, through hooks, deliveries, sweeps, faults and admin calls', async () => {
    sandbox = await startSandbox({
      seedSize: 5,
      crmApiKey: API_KEY,
      reservationApiKey: 'reservation-key-0123456789',
      behaviour: { crmRateLimit: null },
    })
    own = await createTestDatabase()
    const port = await freePort()
    const config = parseConfig({
      CRM_BASE_URL: sandbox.crmUrl,
      CRM_API_KEY: API_KEY,
      CRM_AUTH: 'query',
      RESERVATION_BASE_URL: sandbox.reservationUrl,
      RESERVATION_API_KEY: 'reservation-key-0123456789',
      DATABASE_URL: own.url,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WEBHOOK_SECRET,
      ADMIN_TOKEN,
      UPSTREAM_MAX_RETRIES: '1',
      LOG_LEVEL: 'trace',
    })
    const { logger, lines } = capture({ level: config.logLevel, secrets: configSecrets(config) })
    running = await start(config, logger)
    const upstream = sandbox
    await waitFor(
      async () => (upstream.control.crm.hooks().length === 12 ? true : undefined),
      15_000,
      'hooks',
    )
    // deliveries and a resync make every job kind log; a failing CRM makes the clients log retries
    const person = upstream.control.crm.create('people', { name: 'Mustermann' })
    upstream.control.crm.destroy('people', person.id as number)
    await upstream.control.drainDeliveries()
    const base = `http://127.0.0.1:${port}`
    await fetch(`${base}/webhooks/crm/${WEBHOOK_SECRET}/person/update`, { method: 'POST', body: '{' })
    await fetch(`${base}/webhooks/crm/wrong-secret-0123456789/person/update`, { method: 'POST', body: '{}' })
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const refreshed = () => lines.some((line) => line.includes('"msg":"record refreshed"'))
    await waitFor(async () => (refreshed() ? true : undefined), 15_000, 'the refresh')
    upstream.control.setFaults({ crm: { errorRate: 1 } })
    const resync = await fetch(`${base}/admin/resync`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ resources: ['crm.people'], mode: 'full' }),
    })
    const { run_id: runId } = (await resync.json()) as { run_id: number }
    await waitFor(
      async () => {
        const run = (await (await fetch(`${base}/admin/runs/${runId}`, { headers: admin })).json()) as {
          status: string
        }
        return ['succeeded', 'failed'].includes(run.status) ? run : undefined
      },
      30_000,
      'the resync to end',
    )
    await running.stop()
    running = undefined
    const logged = (text: string) => lines.some((line) => line.includes(text))
    for (const message of ['hooks registered', 'delivery processed', 'record refreshed', 'sweep failed']) {
      expect(logged(`"msg":"${message}"`), message).toBe(true)
    }
    expect(logged('"status":"500"')).toBe(true)
    // every line of a job, the API client's included, names the job and its queue
    const ofJobs = lines.map((line) => JSON.parse(line)).filter((record) => record.jobId)
    expect(ofJobs.filter((record) => record.msg === 'upstream request').length).toBeGreaterThan(0)
    for (const record of ofJobs)
      expect(record).toMatchObject({ queue: expect.any(String), resource: expect.any(String) })
    expectNoSecret(lines, [API_KEY, WEBHOOK_SECRET, ADMIN_TOKEN, 'reservation-key-0123456789'])
  })
})
