// Random bodies, headers, methods and paths against the receiver: never a 500, never a crash, and
// every 2xx has its accepted inbox row (the delivery's job).
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createHttpApp } from '../src/http/app.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS } from '../src/receiver/deliveries.ts'
import { useTestDatabase } from './support/database.ts'
import { receiverFor, SECRET } from './support/receiver.ts'

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
    const statuses = new Map<number, number>()
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
        // one request of each outcome, whatever the random generation reaches
        examples: [
          ['POST', `/webhooks/crm/${SECRET}/person/update`, '{"record_id": 1}', {}],
          ['POST', '/webhooks/crm/wrong-secret/person/update', '{"record_id": 1}', {}],
          ['POST', `/webhooks/crm/${SECRET}/person/update`, '{"record_id": ', {}],
          ['POST', `/webhooks/crm/${SECRET}/invoice/update`, '{"record_id": 1}', {}],
          ['GET', `/webhooks/crm/${SECRET}/person/update`, '', {}],
        ],
      },
    )
    // the generators reach every outcome, so the property is not vacuous
    for (const status of [200, 400, 401, 404, 405])
      expect(statuses.get(status), `status ${status}`).toBeGreaterThan(0)
  })
})
