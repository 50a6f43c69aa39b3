// Random bodies, headers, methods and paths against the receiver: never a 500, never a crash, and
// every 2xx has its accepted inbox row (the delivery's job). The generated requests reach every outcome
// (200, 400, 401, 404, 405), each for at least 1% of them, or the test fails: the property is checked
// on many random inputs of each outcome, not on one example.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createHttpApp } from '../../src/http/app.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS } from '../../src/receiver/deliveries.ts'
import { useTestDatabase } from '../support/database.ts'
import { receiverFor, SECRET } from '../support/receiver.ts'

const database = useTestDatabase()

const anyCase = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((upper) => [...word].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join(''))

const segment = fc.oneof(
  fc.constantFrom(...WEBHOOK_MODELS, ...WEBHOOK_EVENTS).chain(anyCase),
  fc.constantFrom('invoice', 'merge', '', '..', '%', '%zz', '%2F', 'crm', SECRET),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
)

const path = fc.oneof(
  // an endpoint crm-sync registers, in any case: where a body is read at all
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...WEBHOOK_MODELS).chain(anyCase),
        fc.constantFrom(...WEBHOOK_EVENTS).chain(anyCase),
      )
      .map(([m, e]) => `/webhooks/crm/${SECRET}/${m}/${e}`),
  },
  { weight: 3, arbitrary: fc.tuple(segment, segment).map(([m, e]) => `/webhooks/crm/${SECRET}/${m}/${e}`) },
  {
    weight: 1,
    arbitrary: fc
      .array(segment, { maxLength: 6 })
      .chain((rest) =>
        fc.constantFrom(
          ...['/webhooks', '/webhooks/crm', `/webhooks/crm/${SECRET}`].map((p) => `${p}/${rest.join('/')}`),
        ),
      ),
  },
)

const id = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1 }) },
  fc.integer(),
  fc.nat().map(String),
  fc.double(),
  fc.string(),
  fc.constant(null),
  fc.boolean(),
)
const record = fc
  .record({ id }, { requiredKeys: [] })
  .chain((r) => fc.dictionary(fc.string(), fc.jsonValue()).map((extra) => ({ ...extra, ...r })))
const modelName = fc.oneof(fc.constantFrom(...WEBHOOK_MODELS).chain(anyCase), fc.string())
const eventName = fc.oneof(fc.constantFrom(...WEBHOOK_EVENTS).chain(anyCase), fc.string())

const body = fc.oneof(
  // the three shapes without a model or an event that could contradict the URL: most are deliveries
  {
    weight: 3,
    arbitrary: fc
      .oneof(fc.record({ record_id: id }), fc.record({ record }), record)
      .map((b) => JSON.stringify(b)),
  },
  fc
    .record({ model: modelName, event: eventName, record_id: id }, { requiredKeys: [] })
    .map((b) => JSON.stringify(b)),
  fc
    .record({ model: modelName, event: eventName, record }, { requiredKeys: [] })
    .map((b) => JSON.stringify(b)),
  fc.tuple(fc.constantFrom(...WEBHOOK_MODELS), record).map(([key, r]) => JSON.stringify({ [key]: r })),
  record.map((r) => JSON.stringify(r)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary' }),
  fc.string(),
  fc.constant(''),
)

const headers = fc.dictionary(
  fc.constantFrom('content-type', 'x-apikey', 'user-agent', 'x-forwarded-for', 'accept'),
  fc.constantFrom(
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    '',
    'garbage;;=',
    '*/*',
  ),
)

describe('receiver under random input', () => {
  it('never answers 500 and stores every delivery it acknowledges', async () => {
    // the receiver as the service mounts it, so that paths it does not own meet the service's 404
    const app = createHttpApp({
      db: database.db,
      expectedMigrations: 0,
      routes: [receiverFor(database.db).app],
    })
    // One request of each outcome runs first, whatever the random generation reaches; the outcomes
    // are counted over the generated requests only, so that the check below can fail.
    const examples: [string, string, string, Record<string, string>][] = [
      ['POST', `/webhooks/crm/${SECRET}/person/update`, '{"record_id": 1}', {}],
      ['POST', '/webhooks/crm/wrong-secret/person/update', '{"record_id": 1}', {}],
      ['POST', `/webhooks/crm/${SECRET}/person/update`, '{"record_id": ', {}],
      ['POST', `/webhooks/crm/${SECRET}/invoice/update`, '{"record_id": 1}', {}],
      ['GET', `/webhooks/crm/${SECRET}/person/update`, '', {}],
    ]
    const statuses = new Map<number, number>()
    let runs = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH'),
        path,
        body,
        headers,
        async (method, url, text, headerValues) => {
          const init: RequestInit = { method, headers: headerValues }
          if (method !== 'GET') init.body = text
          const response = await app.request(url, init)
          // fast-check runs the examples before any generated value
          if (++runs > examples.length)
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
          expect([200, 400, 401, 404, 405, 413]).toContain(response.status)
          const answer = (await response.json()) as { inbox_id?: number; error?: string }
          if (response.status === 200) {
            const row = await database.db
              .selectFrom('sync.inbox')
              .selectAll()
              .where('id', '=', answer.inbox_id as number)
              .executeTakeFirstOrThrow()
            expect(row.status).toBe('accepted')
          } else {
            expect(typeof answer.error).toBe('string')
          }
        },
      ),
      {
        numRuns: 3000,
        examples,
      },
    )
    // Every outcome is answered to at least 1% of the generated requests (about 2% for the rarest, 200),
    // so the property holds for each of them on many random inputs, not on its example alone.
    const generated = runs - examples.length
    const reached = Object.fromEntries([...statuses].sort(([a], [b]) => a - b))
    console.log(`receiver fuzz: outcomes of ${generated} generated requests: ${JSON.stringify(reached)}`)
    for (const status of [200, 400, 401, 404, 405])
      expect(
        statuses.get(status) ?? 0,
        `generated requests answered ${status}: ${JSON.stringify(reached)}`,
      ).toBeGreaterThanOrEqual(generated / 100)
  })
})
