// How the request core meets failures: retries with backoff for 5xx, network errors and timeouts,
// Retry-After on 429 for every replica, no retry for 401/403/4xx, and bounded attempts.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import type { Clock } from '../../src/api-client/clock.ts'
import {
  RequestAborted,
  UpstreamAuthError,
  UpstreamError,
  UpstreamRequestError,
  UpstreamUnavailableError,
} from '../../src/api-client/errors.ts'
import { backoff, parseRetryAfter } from '../../src/api-client/http.ts'
import { total } from '../../src/api-client/metrics.ts'
import { companies, people } from '../../src/resources/index.ts'
import { CRM_URL, crmClient, person, T0, useNock, useTestDatabase, virtualClock } from './harness.ts'

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  )
  if (error instanceof UpstreamError) return error
  throw new Error(`expected an UpstreamError, got ${String(error)}`)
}

/** A clock at T0 whose sleeps never end: only an aborted signal gets a waiter past one. */
function heldClock(): Clock & { slept: number[]; sleeping: Promise<void> } {
  let slept!: () => void
  const sleeping = new Promise<void>((resolve) => {
    slept = resolve
  })
  return {
    now: () => T0,
    sleepUntil: () => {
      slept()
      return new Promise(() => {})
    },
    drivesBudget: true,
    slept: [],
    sleeping,
  }
}

describe('failures', () => {
  const database = useTestDatabase()
  useNock()

  it('retries a 500 and a 503 with growing backoff, then returns the answer', async () => {
    const { client, clock, metrics } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people/count')
      .reply(500, 'oops')
      .get('/api/people/count')
      .reply(503)
      .get('/api/people/count')
      .reply(200, { total_entries: 3 })

    expect(await client.count(people)).toBe(3)
    // random() is 0.5: three quarters of 500 ms, then of 1000 ms.
    expect(clock.slept.filter((ms) => ms > 0)).toEqual([375, 750])
    expect(total(metrics.retries, { upstream: 'crm', route: 'people.count' })).toBe(2)
    expect(total(metrics.requests, { status: '500' })).toBe(1)
    expect(total(metrics.requests, { status: '503' })).toBe(1)
    expect(total(metrics.requests, { status: '200' })).toBe(1)
  })

  it('retries a network error', async () => {
    const { client, metrics } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people/count')
      .replyWithError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))
      .get('/api/people/count')
      .reply(200, { total_entries: 1 })
    expect(await client.count(people)).toBe(1)
    expect(total(metrics.retries, { reason: 'network' })).toBe(1)
  })

  it('gives up after the configured retries with a typed error that says why', async () => {
    const { client, metrics } = crmClient(database.db, { maxRetries: 2 })
    nock(CRM_URL).get('/api/people/count').times(3).reply(502, { error: 'bad gateway' })
    const error = await failure(client.count(people))
    expect(error).toBeInstanceOf(UpstreamUnavailableError)
    expect(error).toMatchObject({
      reason: 'server',
      attempts: 3,
      status: 502,
      body: { error: 'bad gateway' },
    })
    expect(error.message).toBe(
      'crm GET /api/people/count: server error 502: {"error":"bad gateway"} (gave up after 3 attempts)',
    )
    expect(total(metrics.requests)).toBe(3)
  })

  it('times out a request that gets no answer, and retries it', async () => {
    const { client, metrics } = crmClient(database.db, { timeoutSeconds: 0.05, maxRetries: 1 })
    nock(CRM_URL)
      .get('/api/people/count')
      .times(2)
      .reply(() => new Promise(() => {}))
    const error = await failure(client.count(people))
    expect(error).toMatchObject({ reason: 'timeout', attempts: 2, status: null })
    expect(error.message).toContain('no answer within 50 ms')
    expect(total(metrics.requests, { status: 'timeout' })).toBe(2)
  })

  it('cuts off the request in flight once its signal is aborted, and sends no other', async () => {
    const stop = new AbortController()
    const { client, metrics } = crmClient(database.db, { timeoutSeconds: 30 }, { signal: stop.signal })
    let arrived!: () => void
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve
    })
    nock(CRM_URL)
      .get('/api/people/count')
      .reply(() => {
        arrived()
        return new Promise(() => {}) // never answers: only the signal ends the wait
      })
    const asked = client.count(people).then(
      () => 'answered',
      (error: unknown) => error,
    )
    await inFlight
    stop.abort()
    expect(await asked).toBeInstanceOf(RequestAborted)
    // No retry, and no request counted as a timeout or failure of the upstream.
    expect(total(metrics.requests)).toBe(0)
    await expect(client.count(people)).rejects.toBeInstanceOf(RequestAborted)
  })

  it("stops waiting out a retry's backoff once its signal is aborted", async () => {
    const stop = new AbortController()
    const clock = heldClock()
    const { client, metrics } = crmClient(database.db, {}, { clock, signal: stop.signal })
    nock(CRM_URL).get('/api/people/count').reply(500, 'oops')
    const asked = client.count(people).catch((error: unknown) => error)
    await clock.sleeping
    stop.abort()
    expect(await asked).toBeInstanceOf(RequestAborted)
    expect(total(metrics.requests)).toBe(1)
  })

  it('stops waiting for the budget once its signal is aborted, having sent nothing', async () => {
    const budgetKey = `crm-paused-${Date.now()}`
    const first = crmClient(database.db, { maxRetries: 0 }, { budgetKey })
    nock(CRM_URL).get('/api/people/count').reply(429, '', { 'Retry-After': '600' })
    await expect(first.client.count(people)).rejects.toBeInstanceOf(UpstreamUnavailableError)

    const stop = new AbortController()
    const clock = heldClock()
    const { client, metrics } = crmClient(database.db, {}, { clock, budgetKey, signal: stop.signal })
    const asked = client.count(companies).catch((error: unknown) => error)
    await clock.sleeping // the budget is paused for 600 s: the take waits
    stop.abort()
    expect(await asked).toBeInstanceOf(RequestAborted)
    expect(total(metrics.requests)).toBe(0)
  })

  it('honours Retry-After on a 429: the retry goes out no sooner', async () => {
    const { client, clock, metrics } = crmClient(database.db)
    const arrivals: number[] = []
    nock(CRM_URL)
      .get('/api/people/count')
      .reply(429, { error: 'too many requests' }, { 'Retry-After': '7' })
      .get('/api/people/count')
      .reply(() => {
        arrivals.push(clock.now())
        return [200, { total_entries: 2 }]
      })
    expect(await client.count(people)).toBe(2)
    expect(arrivals).toHaveLength(1)
    expect(arrivals[0]).toBeGreaterThanOrEqual(T0 + 7000)
    expect(arrivals[0]).toBeLessThan(T0 + 9000)
    expect(total(metrics.retries, { reason: 'rate-limited' })).toBe(1)
    expect(total(metrics.throttledSeconds, { upstream: 'crm' })).toBeGreaterThanOrEqual(7)
  })

  it('pauses every client of the budget on a 429, not just the one that got it', async () => {
    const clock = virtualClock()
    const budgetKey = `crm-429-${Date.now()}`
    const first = crmClient(database.db, { maxRetries: 0 }, { clock, budgetKey })
    const second = crmClient(database.db, {}, { clock, budgetKey })
    let arrivedAt = 0
    nock(CRM_URL)
      .get('/api/people/count')
      .reply(429, '', { 'Retry-After': '30' })
      .get('/api/companies/count')
      .reply(() => {
        arrivedAt = clock.now()
        return [200, { total_entries: 1 }]
      })
    const error = await failure(first.client.count(people))
    expect(error).toMatchObject({ reason: 'rate-limited', status: 429, attempts: 1 })

    // The other client never saw the 429, yet waits out the same pause.
    expect(await second.client.count(companies)).toBe(1)
    expect(arrivedAt).toBeGreaterThanOrEqual(T0 + 30_000)
    expect(total(second.metrics.throttledSeconds)).toBeGreaterThanOrEqual(30)
  })

  it('pauses for one window when a 429 has no usable Retry-After', async () => {
    const { client, clock } = crmClient(database.db, { windowSeconds: 10 })
    let arrivedAt = 0
    nock(CRM_URL)
      .get('/api/people/count')
      .reply(429)
      .get('/api/people/count')
      .reply(() => {
        arrivedAt = clock.now()
        return [200, { total_entries: 2 }]
      })
    await client.count(people)
    expect(arrivedAt).toBeGreaterThanOrEqual(T0 + 10_000)
  })

  it('does not retry a 401, and says the key is not accepted', async () => {
    const { client, metrics } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people/count')
      .once()
      .reply(401, { error: 'not authorized', description: 'not authorized' })
    const error = await failure(client.count(people))
    expect(error).toBeInstanceOf(UpstreamAuthError)
    expect(error).toMatchObject({ status: 401, body: { error: 'not authorized' } })
    expect(total(metrics.requests)).toBe(1)
    expect(total(metrics.retries)).toBe(0)
  })

  it('does not retry a 403', async () => {
    const { client, metrics } = crmClient(database.db)
    nock(CRM_URL).get('/api/people/1').query(true).reply(403, { error: 'forbidden' })
    await expect(client.show(people, 1)).rejects.toBeInstanceOf(UpstreamAuthError)
    expect(total(metrics.requests)).toBe(1)
  })

  it("turns a 422 into a typed error that carries the upstream's body", async () => {
    const { client, metrics } = crmClient(database.db)
    const body = { target_url: ['is invalid'], model: 'is not included in the list' }
    nock(CRM_URL).post('/api/hooks').reply(422, body)
    const error = await failure(
      client.createHook({ model: 'person', event: 'update', target_url: 'nope', object_type: 'lean' }),
    )
    expect(error).toBeInstanceOf(UpstreamRequestError)
    expect(error).toMatchObject({ status: 422, body, method: 'POST', path: '/api/hooks' })
    expect(total(metrics.retries)).toBe(0)
  })

  it('does not repeat a POST that may have reached the upstream (a 500 could have created the hook)', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL).post('/api/hooks').once().reply(500)
    const error = await failure(
      client.createHook({
        model: 'person',
        event: 'update',
        target_url: 'https://x.test/',
        object_type: 'lean',
      }),
    )
    expect(error).toMatchObject({ reason: 'server', attempts: 1 })
  })

  it('returns the time the successful attempt was sent, not the first attempt', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people')
      .query(true)
      .reply(500)
      .get('/api/people')
      .query(true)
      .reply(200, [{ person: person(1) }])
    const page = await client.index(people)
    expect(page.fetchedAt).toEqual(new Date(T0 + 375))
  })
})

describe('backoff and Retry-After', () => {
  it('grows exponentially up to a bound, with jitter', () => {
    expect([1, 2, 3, 4].map((attempt) => backoff(attempt, () => 0))).toEqual([250, 500, 1000, 2000])
    expect([1, 2, 3, 4].map((attempt) => backoff(attempt, () => 1))).toEqual([500, 1000, 2000, 4000])
    expect(backoff(30, () => 1)).toBe(30_000)
  })

  it('reads seconds and HTTP dates, and caps absurd values', () => {
    expect(parseRetryAfter('7', T0)).toBe(7000)
    expect(parseRetryAfter(new Date(T0 + 12_000).toUTCString(), T0)).toBe(12_000)
    expect(parseRetryAfter('86400', T0)).toBe(600_000)
    expect(parseRetryAfter('soon', T0)).toBeNull()
    expect(parseRetryAfter(null, T0)).toBeNull()
  })
})
