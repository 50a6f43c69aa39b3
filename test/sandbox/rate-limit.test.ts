// The rate limit: 50 calls per 10 seconds per key by default, then 429 with Retry-After.
// The clock is a manual one, so the window is crossed by advancing it, not by waiting.
import { describe, expect, it } from 'vitest'
import { harness } from './helpers.ts'

describe('rate limit', () => {
  it('answers the 51st call within 10 s with 429 and Retry-After, and admits calls once the window has passed', async () => {
    const { crm, clock, sandbox } = await harness()
    for (let i = 0; i < 50; i++) {
      expect((await crm.get('people')).status).toBe(200)
      clock.advance(100)
    }
    const limited = await crm.get('people')
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('5')
    expect(limited.text).toBe('Retry later\n')
    clock.advance(4_000)
    expect((await crm.get('people')).headers.get('retry-after')).toBe('1')
    clock.advance(1_000)
    expect((await crm.get('people')).status).toBe(200)
    expect(sandbox.control.counters().crm).toMatchObject({
      rateLimited: 2,
      statuses: { '200': 51, '429': 2 },
      // the quiet asked for: 5 s from the first 429; the second's second lay inside it
      retryAfterMs: 5_000,
      // none of it injected: a client within the limit is never asked for it
      injectedRetryAfterMs: 0,
    })
  })

  it('is configurable while running, and can be switched off', async () => {
    const { crm, clock, sandbox } = await harness()
    sandbox.control.setBehaviour({ crmRateLimit: { requests: 2, windowSeconds: 30 } })
    expect((await crm.get('people')).status).toBe(200)
    expect((await crm.get('people')).status).toBe(200)
    const limited = await crm.get('people')
    expect(limited).toMatchObject({ status: 429 })
    expect(limited.headers.get('retry-after')).toBe('30')
    clock.advance(30_000)
    expect((await crm.get('people')).status).toBe(200)
    sandbox.control.setBehaviour({ crmRateLimit: null })
    for (let i = 0; i < 60; i++) expect((await crm.get('people/count')).status).toBe(200)
  })

  it('keeps a budget per service, and spends none on the control API', async () => {
    const { crm, reservation, sandbox } = await harness()
    for (let i = 0; i < 50; i++) sandbox.control.crm.create('people', { name: `P${i}` })
    for (let i = 0; i < 50; i++) expect((await crm.get('people/count')).status).toBe(200)
    expect((await crm.get('people/count')).status).toBe(429)
    expect((await reservation.get('contacts')).status).toBe(200)
  })

  it('checks the key before the budget: calls without a valid key get 401 and spend nothing', async () => {
    const { crm } = await harness({ behaviour: { crmRateLimit: { requests: 1, windowSeconds: 10 } } })
    for (let i = 0; i < 3; i++) expect((await crm.raw('/api/people?apikey=nope')).status).toBe(401)
    expect((await crm.get('people')).status).toBe(200)
    expect((await crm.get('people')).status).toBe(429)
  })
})
