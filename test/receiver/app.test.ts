// The webhook receiver through app.request(): every shape x event x model, the secret, every bad
// input, the 503 paths, and the promise that no 2xx goes out before the inbox row (the delivery's
// job: workers take accepted rows) is committed.
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import type { Hono } from 'hono'
import { sql } from 'kysely'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { webhookPath } from '../../src/receiver/app.ts'
import { WEBHOOK_BODY_LIMIT } from '../../src/receiver/body.ts'
import { createReceiverCounters } from '../../src/receiver/counters.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS, type WebhookModel } from '../../src/receiver/deliveries.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { claimDeliveries } from '../../src/store/inbox.ts'
import { useTestDatabase, waitForLockWaiter } from '../support/database.ts'
import { settledWithin, waitFor } from '../support/process.ts'
import { receiverFor, SECRET } from '../support/receiver.ts'

const database = useTestDatabase()

/** Whether a worker would take the delivery: accepted, due, and not held by anyone. */
async function claimable(id: number) {
  const rows = await database.db.transaction().execute((trx) => claimDeliveries(trx, 1, { ids: [id] }))
  return rows.length === 1
}

const post = (
  app: { request: (path: string, init: RequestInit) => Response | Promise<Response> },
  path: string,
  body: string,
) => app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json' } })

const person = {
  id: 30016185,
  name: 'Mustermann',
  first_name: 'Maxi',
  updated_at: '2022-12-14T15:53:43.000+01:00',
}

function bodies(model: WebhookModel, event: string, id: number) {
  const record = { ...person, id }
  return {
    lean: { model: model[0]?.toUpperCase() + model.slice(1), event, record_id: id },
    nested: { model, event: event.toUpperCase(), record: { ...record, tags: [] } },
    api: { [model]: record },
    flat: { id, last_name: 'Mustermann', company: 'ACME', office_phone: '+49 341 1' },
  }
}

async function inboxRow(id: number) {
  return database.db.selectFrom('sync.inbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

async function latestRejected() {
  return database.db
    .selectFrom('sync.inbox')
    .selectAll()
    .where('status', '=', 'rejected')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow()
}

/** Runs `work` against the receiver served by Node's HTTP server, as deployed, on a free port. */
async function throughServer(app: Hono, work: (port: number) => Promise<void>) {
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise((resolve) => server.once('listening', resolve))
  try {
    await work((server.address() as AddressInfo).port)
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
}

/** POSTs `body` through Node's client, its length announced or in chunks of 64 KiB. */
function postThrough(port: number, path: string, body: string, chunked: boolean) {
  return new Promise<{ status: number; text: string; connection: string | undefined }>((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: chunked
          ? { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }
          : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk) => {
          text += chunk
        })
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text, connection: response.headers.connection }),
        )
      },
    )
    request.on('error', reject)
    if (chunked) for (let at = 0; at < body.length; at += 65_536) request.write(body.slice(at, at + 65_536))
    request.end(chunked ? undefined : body)
  })
}

async function inboxCount() {
  const result = await sql<{ n: number }>`select count(*)::int as n from sync.inbox`.execute(database.db)
  return result.rows[0]?.n ?? 0
}

describe('accepted deliveries', () => {
  const cases = WEBHOOK_MODELS.flatMap((model) =>
    WEBHOOK_EVENTS.flatMap((event) =>
      (['lean', 'nested', 'api', 'flat'] as const).map((shape) => [model, event, shape] as const),
    ),
  )

  it.each(cases)('%s %s as %s: 200 after an inbox row a worker can take', async (model, event, shape) => {
    const { app } = receiverFor(database.db)
    const id = 1_000_000 + Math.floor(Math.random() * 1_000_000)
    const response = await post(
      app,
      webhookPath(SECRET, model, event),
      JSON.stringify(bodies(model, event, id)[shape]),
    )
    expect(response.status).toBe(200)
    const { inbox_id } = (await response.json()) as { inbox_id: number }
    const row = await inboxRow(inbox_id)
    expect(row).toMatchObject({ model, event, shape, record_id: id, status: 'accepted', reason: null })
    expect(row.payload).toEqual(bodies(model, event, id)[shape])
    expect(await claimable(inbox_id)).toBe(true)
  })

  it('takes the model and event of the URL in any case', async () => {
    const { app } = receiverFor(database.db)
    const response = await post(
      app,
      `/webhooks/crm/${SECRET}/Person/UPDATE`,
      JSON.stringify({ record_id: '77' }),
    )
    expect(response.status).toBe(200)
    const { inbox_id } = (await response.json()) as { inbox_id: number }
    expect(await inboxRow(inbox_id)).toMatchObject({
      model: 'person',
      event: 'update',
      shape: 'lean',
      record_id: 77,
    })
  })

  it("keeps a delivery's headers with credentials and the secret masked, accepted or rejected", async () => {
    const { app } = receiverFor(database.db)
    const path = webhookPath(SECRET, 'person', 'update')
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'CRM-Webhooks/1.0',
      authorization: 'Bearer not-for-the-inbox',
      'x-original-uri': path,
      'x-long': 'x'.repeat(5_000),
    }
    const accepted = await app.request(path, { method: 'POST', body: '{"record_id": 5}', headers })
    const rejected = await app.request(path, { method: 'POST', body: '{"hello": 1}', headers })
    expect([accepted.status, rejected.status]).toEqual([200, 400])
    const { inbox_id } = (await accepted.json()) as { inbox_id: number }
    for (const row of [await inboxRow(inbox_id), await latestRejected()]) {
      expect(row.headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': 'CRM-Webhooks/1.0',
        authorization: '•••',
        'x-original-uri': '/webhooks/crm/•••/person/update',
      })
      expect((row.headers as Record<string, string>)['x-long']).toHaveLength(1_001)
      expect(JSON.stringify(row)).not.toContain(SECRET)
      expect(JSON.stringify(row)).not.toContain('not-for-the-inbox')
    }
  })

  // jsonb refuses these although JSON allows them: the delivery would get a 503 for ever.
  it.each([
    [
      'NUL and lone surrogates',
      '{"id": 5, "name": "a\\u0000b", "note": "\\ud800"}',
      { name: 'a\uFFFDb', note: '\uFFFD' },
    ],
    ['a number beyond numeric', '{"id": 5, "n": 1e200000, "m": -2.5e3}', { n: null, m: -2500 }],
    ["a number below numeric's scale", '{"id": 5, "n": 1e-16384}', { n: 0 }],
    ['a run of 20,000 digits after the point', `{"id": 5, "n": 0.${'0'.repeat(20_000)}1}`, { n: 0 }],
  ])('stores a payload with %s as JavaScript reads it, rather than failing', async (_, body, values) => {
    const { app } = receiverFor(database.db)
    const response = await post(app, webhookPath(SECRET, 'company', 'update'), body)
    expect(response.status).toBe(200)
    const { inbox_id } = (await response.json()) as { inbox_id: number }
    expect(await inboxRow(inbox_id)).toMatchObject({
      status: 'accepted',
      record_id: 5,
      payload: { id: 5, ...values },
    })
  })

  it('stores a payload whose numbers fit as it came (big integers, exponents in range)', async () => {
    const { app } = receiverFor(database.db)
    const body = '{"id": 5, "big": 123456789012345678901234567890, "e": 1.5e300, "t": true, "f": false}'
    const response = await post(app, webhookPath(SECRET, 'company', 'update'), body)
    const { inbox_id } = (await response.json()) as { inbox_id: number }
    const { rows } = await sql<{ big: string; e: string }>`
      select payload->>'big' as big, payload->>'e' as e from sync.inbox where id = ${inbox_id}`.execute(
      database.db,
    )
    expect(rows[0]).toEqual({ big: '123456789012345678901234567890', e: `15${'0'.repeat(299)}` })
  })
})

describe('the secret', () => {
  it.each([
    ['missing', '/webhooks/crm/person/update'],
    ['wrong', webhookPath('not-the-secret-000000', 'person', 'update')],
    ['almost right', webhookPath(`${SECRET}x`, 'person', 'update')],
    ['empty', '/webhooks/crm//person/update'],
  ])('%s: 401 and nothing stored but a counter', async (_, path) => {
    const { app, counters } = receiverFor(database.db)
    const before = await inboxCount()
    const response = await post(app, path, JSON.stringify({ model: 'person', event: 'update', record_id: 1 }))
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ error: 'unauthorized' })
    expect(await inboxCount()).toBe(before)
    expect(counters.unauthorized).toBe(1)
  })
})

describe('bad input', () => {
  const path = webhookPath(SECRET, 'person', 'update')

  it.each([
    ['malformed JSON', '{"record_id": 1', /^malformed JSON/],
    ['a JSON array', '[1, 2]', /must be a JSON object/],
    ['an unknown shape', '{"hello": "world"}', /unknown payload shape/],
    ['a lean payload without an id', '{"model": "person", "event": "update"}', /unknown payload shape/],
    [
      'a lean payload with a bad id',
      '{"model": "person", "event": "update", "record_id": "abc"}',
      /no usable record id/,
    ],
    [
      'a nested payload without a record id',
      '{"model": "person", "event": "update", "record": {"name": "x"}}',
      /no usable record id/,
    ],
    ['an api payload without an id', '{"person": {"name": "x"}}', /no usable record id/],
    ['a flat payload with a negative id', '{"id": -4, "last_name": "x"}', /no usable record id/],
    [
      'a model contradicting the URL',
      '{"model": "deal", "event": "update", "record_id": 1}',
      /model "deal" contradicts the URL's model "person"/,
    ],
    [
      'an event contradicting the URL',
      '{"model": "person", "event": "destroy", "record_id": 1}',
      /event "destroy" contradicts/,
    ],
    [
      'an api payload of another model',
      '{"company": {"id": 1}}',
      /wraps a company, but the URL is for a person/,
    ],
    // jsonb refuses some 12,000 levels ("stack depth limit exceeded"): the delivery got a 503 for ever.
    [
      'a payload nested 20,000 deep',
      `{"id": 4, "deep": ${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
      /nested deeper than 1000 levels/,
    ],
  ])('%s: 400 naming the problem, kept in the inbox as rejected', async (_, body, reason) => {
    const { app } = receiverFor(database.db)
    const response = await post(app, path, body)
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as { error: string }
    expect(error).toMatch(reason)
    const row = await latestRejected()
    expect(row).toMatchObject({ model: 'person', event: 'update', reason: error })
    expect(row.payload ?? row.body).toEqual(row.payload === null ? body : JSON.parse(body))
  })

  it('400 for malformed JSON with a NUL in it, kept with U+FFFD in its place (in the reason too)', async () => {
    const { app } = receiverFor(database.db)
    const response = await post(app, path, '[1, \u0000]')
    expect(response.status).toBe(400)
    const row = await latestRejected()
    expect(row.body).toBe('[1, \uFFFD]')
    expect(row.reason).toMatch(/^malformed JSON/)
    expect(row.reason).not.toContain('\u0000')
  })

  it('413 for a body over the limit', async () => {
    const { app } = receiverFor(database.db)
    const big = JSON.stringify({ id: 1, blob: 'x'.repeat(WEBHOOK_BODY_LIMIT) })
    const response = await post(app, path, big)
    expect(response.status).toBe(413)
  })

  // Through Node's server, as deployed: a length announced over the limit is refused before the body
  // is read; a chunked body is counted as it streams; a body within the limit is read and kept.
  it('413 through the HTTP server, for an announced length and for a chunked body', async () => {
    const { app } = receiverFor(database.db)
    await throughServer(app, async (port) => {
      const big = JSON.stringify({ id: 1, blob: 'x'.repeat(WEBHOOK_BODY_LIMIT) })
      for (const chunked of [false, true]) {
        const refused = await postThrough(port, path, big, chunked)
        expect(refused.status).toBe(413)
        expect(JSON.parse(refused.text)).toEqual({ error: `the body exceeds ${WEBHOOK_BODY_LIMIT} bytes` })
        // A chunked body's rest is left unread: the socket is not offered for another request.
        if (chunked) expect(refused.connection).toBe('close')
        const fits = JSON.stringify({ id: 1, blob: 'x'.repeat(WEBHOOK_BODY_LIMIT - 100) })
        const accepted = await postThrough(port, path, fits, chunked)
        expect(accepted.status).toBe(200)
        const { inbox_id } = JSON.parse(accepted.text) as { inbox_id: number }
        expect(((await inboxRow(inbox_id)).payload as { blob: string }).blob).toHaveLength(
          WEBHOOK_BODY_LIMIT - 100,
        )
      }
    })
  })

  // Both ways of reading a body decode it alike: UTF-8, one leading BOM dropped (as the encoding
  // standard says), a second one left for JSON.parse to refuse.
  it('a body is decoded alike whether its length is announced or it comes in chunks', async () => {
    const { app } = receiverFor(database.db)
    await throughServer(app, async (port) => {
      for (const chunked of [false, true]) {
        const once = await postThrough(port, path, '\uFEFF{"id": 7, "name": "Zoë 😀"}', chunked)
        expect(once.status).toBe(200)
        const { inbox_id } = JSON.parse(once.text) as { inbox_id: number }
        expect((await inboxRow(inbox_id)).payload).toEqual({ id: 7, name: 'Zoë 😀' })
        const twice = await postThrough(port, path, '\uFEFF\uFEFF{"id": 7}', chunked)
        expect(twice.status).toBe(400)
        expect((await latestRejected()).reason).toMatch(/^malformed JSON/)
      }
    })
  })

  // A sender that hangs up mid-body: nothing to keep, and not the database's fault (no 503, no
  // `unavailable`), whether the body's length was announced or it came in chunks.
  it('a body cut off by the sender is counted as aborted, not as the database failing', async () => {
    const counters = createReceiverCounters()
    const { app } = receiverFor(database.db, { counters })
    const aborted = { model: 'person', event: 'update', shape: 'unknown', outcome: 'aborted' } as const
    const before = await inboxCount()
    await throughServer(app, async (port) => {
      const heads = {
        announced: 'Content-Length: 1000\r\n\r\n{"id": 1, ',
        chunked: 'Transfer-Encoding: chunked\r\n\r\na\r\n{"id": 1, \r\n',
      }
      let expected = 0
      for (const [name, head] of Object.entries(heads)) {
        const socket = net.connect(port, '127.0.0.1')
        await new Promise((resolve) => socket.once('connect', resolve))
        // The head and the start of the body, then the sender goes (TCP delivers them before the end).
        socket.end(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${head}`)
        expected += 1
        await waitFor(
          async () => (counters.deliveries.get(aborted) === expected ? true : undefined),
          5_000,
          `the ${name} body counted as aborted`,
        )
        socket.destroy()
      }
      const unavailable = counters.deliveries.all().filter(({ labels }) => labels.outcome === 'unavailable')
      expect(unavailable).toEqual([])
      expect(await inboxCount()).toBe(before)
    })
  })

  it('405 for another method', async () => {
    const { app } = receiverFor(database.db)
    const response = await app.request(path, { method: 'GET' })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
  })

  it.each([
    ['an unknown model', `/webhooks/crm/${SECRET}/invoice/update`],
    ['an unknown event', `/webhooks/crm/${SECRET}/person/merge`],
    ['a path too long', `/webhooks/crm/${SECRET}/person/update/extra`],
    ['another service', `/webhooks/reservations/${SECRET}/person/update`],
  ])('404 for %s', async (_, unknown) => {
    const { app } = receiverFor(database.db)
    const response = await post(app, unknown, '{"id": 1}')
    // the secret sits in the second segment: another service puts it in the wrong place
    expect([404, 401]).toContain(response.status)
    if (!unknown.includes('reservations')) expect(response.status).toBe(404)
  })

  it.each([
    [
      'a model it does not mirror',
      `/webhooks/crm/${SECRET}/Invoice/update`,
      { model: 'invoice', event: 'update', shape: 'unknown', outcome: 'unknown_model' },
    ],
    [
      'an event it does not know',
      `/webhooks/crm/${SECRET}/person/merge`,
      { model: 'person', event: 'merge', shape: 'unknown', outcome: 'unknown_event' },
    ],
    [
      'a made-up model',
      `/webhooks/crm/${SECRET}/${'x'.repeat(40)}/update`,
      { model: 'other', event: 'update', shape: 'unknown', outcome: 'unknown_model' },
    ],
    [
      'a path too long',
      `/webhooks/crm/${SECRET}/person/update/extra`,
      { model: 'person', event: 'update', shape: 'unknown', outcome: 'unknown_path' },
    ],
  ] as const)(
    'counts a delivery to %s (issue 17), still answers 404, and keeps nothing',
    async (_, path, labels) => {
      const { app, counters } = receiverFor(database.db)
      const before = await inboxCount()
      const response = await post(app, path, '{"model": "invoice", "event": "update", "record_id": 1}')
      expect(response.status).toBe(404)
      expect(counters.deliveries.get(labels)).toBe(1)
      expect(counters.deliveries.all()).toEqual([{ labels, count: 1 }])
      expect(counters.unauthorized).toBe(0)
      expect(counters.previousSecret).toBe(0)
      expect(await inboxCount()).toBe(before)
    },
  )
})

describe('a rotation of the secret (issue 17)', () => {
  const PREVIOUS = 'previous-secret-0123456789'
  const body = '{"model": "person", "event": "update", "record_id": 7}'

  it('accepts the current and the previous secret, and counts deliveries that carry the previous one', async () => {
    const { app, counters } = receiverFor(database.db, { previousSecret: PREVIOUS })
    const current = await post(app, webhookPath(SECRET, 'person', 'update'), body)
    expect(current.status).toBe(200)
    expect(counters.previousSecret).toBe(0)
    const previous = await post(app, webhookPath(PREVIOUS, 'person', 'update'), body)
    expect(previous.status).toBe(200)
    const { inbox_id: inboxId } = (await previous.json()) as { inbox_id: number }
    expect(await inboxRow(inboxId)).toMatchObject({ model: 'person', event: 'update', record_id: 7 })
    expect(counters.previousSecret).toBe(1)
    const accepted = { model: 'person', event: 'update', shape: 'lean', outcome: 'accepted' } as const
    expect(counters.deliveries.get(accepted)).toBe(2)
  })

  it('still refuses any other secret, and the previous one once it is no longer configured', async () => {
    const rotating = receiverFor(database.db, { previousSecret: PREVIOUS })
    const other = await post(rotating.app, webhookPath('another-secret-0123456789', 'person', 'update'), body)
    expect(other.status).toBe(401)
    const done = receiverFor(database.db)
    expect((await post(done.app, webhookPath(PREVIOUS, 'person', 'update'), body)).status).toBe(401)
    expect(done.counters.unauthorized).toBe(1)
  })
})

describe('durability', () => {
  it('answers 503 when the database is unreachable, never 2xx', async () => {
    const pool = createPool('postgres://nobody@127.0.0.1:1/none')
    const { app } = receiverFor(createDb(pool))
    const response = await post(
      app,
      webhookPath(SECRET, 'deal', 'create'),
      '{"model":"deal","event":"create","record_id":5}',
    )
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    await pool.end()
  })

  it('answers 503 and keeps no row when the insert fails', async () => {
    // A connection that cannot write: every statement fails inside the database.
    const pool = createPool(database.url)
    pool.on('connect', (client) => {
      void client.query('set default_transaction_read_only = on').catch(() => {})
    })
    const { app } = receiverFor(createDb(pool))
    const before = await inboxCount()
    const response = await post(
      app,
      webhookPath(SECRET, 'deal', 'create'),
      '{"model":"deal","event":"create","record_id":5}',
    )
    expect(response.status).toBe(503)
    expect(await inboxCount()).toBe(before)
    await pool.end()
  })

  it('sends no 2xx before the inbox row is committed', async () => {
    const { app } = receiverFor(database.db)
    // Hold a lock that the receiver's insert must wait for.
    const blocker = new pg.Client({ connectionString: database.url })
    await blocker.connect()
    await blocker.query('begin')
    await blocker.query('lock table sync.inbox in exclusive mode')
    try {
      let answered = false
      const pending = Promise.resolve(
        post(app, webhookPath(SECRET, 'project', 'update'), '{"project": {"id": 9}}'),
      ).then((response) => {
        answered = true
        return response
      })
      // Wait until the receiver is blocked inside its transaction.
      await waitFor(
        async () => {
          // pg_stat_activity is a snapshot per transaction: clear it to see the present
          await blocker.query('select pg_stat_clear_snapshot()')
          const { rows } = await blocker.query(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
           and query like '%insert into %inbox%'`,
          )
          return rows.length > 0 ? true : undefined
        },
        10_000,
        'the receiver to wait for the lock',
      )
      expect(answered).toBe(false)
      await blocker.query('rollback')
      const response = await pending
      expect(response.status).toBe(200)
      const { inbox_id } = (await response.json()) as { inbox_id: number }
      expect(await inboxRow(inbox_id)).toMatchObject({ status: 'accepted' })
      expect(await claimable(inbox_id)).toBe(true)
    } finally {
      await blocker.end()
    }
  })
})

describe('a slow database (issue 17)', () => {
  /** Holds `sync.inbox` locked, as a stuck session or a long migration would, until `release`. */
  async function lockInbox() {
    const blocker = new pg.Client({ connectionString: database.url })
    await blocker.connect()
    await blocker.query('begin')
    await blocker.query('lock table sync.inbox in access exclusive mode')
    return async () => {
      await blocker.query('rollback')
      await blocker.end()
    }
  }

  /** Waits until no session of this database runs an insert into the inbox any more. */
  async function noInsertRunning() {
    await waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and state <> 'idle' and query ilike '%insert into%inbox%'
            and pid <> pg_backend_pid()`.execute(database.db)
        return rows[0]?.n === 0 ? true : undefined
      },
      10_000,
      'the inserts into the inbox to end',
    )
  }

  it('answers 503 with a reason within a few seconds while the inbox is locked, and keeps nothing', async () => {
    const { app } = receiverFor(database.db)
    const before = await inboxCount()
    const release = await lockInbox()
    try {
      const started = Date.now()
      // an acceptable delivery and a malformed one: neither may hang on the lock
      const answers = await Promise.all(
        [
          post(app, webhookPath(SECRET, 'deal', 'update'), '{"model":"deal","event":"update","record_id":7}'),
          post(app, webhookPath(SECRET, 'deal', 'update'), '{"model": "deal", '),
        ].map((answer) => settledWithin(Promise.resolve(answer), 15_000)),
      )
      // the 5 s budget and the grace for an answer, with room for a slow machine
      expect(Date.now() - started).toBeLessThan(9_000)
      for (const answer of answers) {
        expect(answer.status).toBe('fulfilled')
        const response = (answer as { value: Response }).value
        expect(response.status).toBe(503)
        expect(response.headers.get('retry-after')).toBe('5')
        expect(await response.json()).toEqual({
          error: 'the database did not store the delivery within 5 s; retry later',
        })
      }
    } finally {
      await release()
    }
    // The inserts were cancelled, not left to commit once the lock is gone (the sender retries them).
    await noInsertRunning()
    expect(await inboxCount()).toBe(before)
  }, 30_000)

  it('answers 503 at once when too many deliveries wait to be stored, and stores the ones it took', async () => {
    const { app, counters } = receiverFor(database.db, {
      writer: { concurrency: 1, maxBatch: 1, maxWaiting: 1, budgetMs: 20_000 },
    })
    const path = webhookPath(SECRET, 'person', 'update')
    const release = await lockInbox()
    const send = (id: number) =>
      Promise.resolve(post(app, path, `{"model":"person","event":"update","record_id":${id}}`))
    let taken: Promise<Response>[] = []
    try {
      // One insert waits for the lock; of the next two deliveries one may wait behind it, and the
      // other finds the queue full: it is answered while the lock is still held.
      taken = [send(1)]
      await waitForLockWaiter(database.db, 'the first insert to wait for the lock')
      taken.push(send(2), send(3))
      const first = await settledWithin(Promise.race(taken.slice(1)), 2_000)
      expect(first.status).toBe('fulfilled')
      const response = (first as { value: Response }).value
      expect(response.status).toBe(503)
      expect(await response.clone().json()).toEqual({
        error: 'too many deliveries are waiting to be stored; retry later',
      })
      const unavailable = {
        model: 'person',
        event: 'update',
        shape: 'unknown',
        outcome: 'unavailable',
      } as const
      expect(counters.deliveries.get(unavailable)).toBe(1)
    } finally {
      await release()
    }
    const statuses = await Promise.all(taken.map(async (answer) => (await answer).status))
    expect(statuses.sort()).toEqual([200, 200, 503])
  })
})
