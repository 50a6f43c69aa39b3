// Fault injection, settable while running: on deliveries (drop, duplicate, delay, receiver down)
// and on API calls (500s, 429s, latency), in-process and over the control API.
import { describe, expect, it } from 'vitest'
import { addHook, type Harness, harness, receiver } from './helpers.ts'

async function hooked(h: Harness) {
  const target = await receiver()
  await addHook(h, { model: 'person', event: 'create', target_url: target.url, object_type: 'lean' })
  const create = (name: string) => h.sandbox.control.crm.create('people', { name }).id
  const ids = () => target.received.map((delivery) => delivery.body.record_id)
  return { target, create, ids }
}

describe('delivery faults', () => {
  it('drops deliveries', async () => {
    const h = await harness({ faults: { deliveries: { dropRate: 1 } } })
    const { create, ids } = await hooked(h)
    create('A')
    create('B')
    await h.sandbox.control.drainDeliveries()
    expect(ids()).toEqual([])
    expect(h.sandbox.control.counters().deliveries).toMatchObject({ queued: 2, dropped: 2, succeeded: 0 })
  })

  it('duplicates deliveries', async () => {
    const h = await harness()
    const { create, ids } = await hooked(h)
    h.sandbox.control.setFaults({ deliveries: { duplicateRate: 1 } })
    const a = create('A')
    await h.sandbox.control.drainDeliveries()
    expect(ids()).toEqual([a, a])
    expect(h.sandbox.control.counters().deliveries).toMatchObject({ queued: 1, duplicated: 1, succeeded: 2 })
  })

  it('delays deliveries, so that later ones overtake them', async () => {
    const h = await harness()
    const { create, ids } = await hooked(h)
    h.sandbox.control.setFaults({ deliveries: { delayRate: 1, delayMs: 60_000 } })
    const a = create('A')
    h.sandbox.control.setFaults({ deliveries: { delayRate: 0 } })
    const b = create('B')
    const c = create('C')
    expect(h.sandbox.control.pendingDeliveries()).toBeGreaterThan(0)
    await h.sandbox.control.drainDeliveries()
    expect(ids()).toEqual([b, c, a])
    expect(h.sandbox.control.counters().deliveries.delayed).toBe(1)
    expect(h.sandbox.control.pendingDeliveries()).toBe(0)
  })

  it('fails every delivery while the receiver is down, then recovers', async () => {
    const h = await harness()
    const { create, ids } = await hooked(h)
    h.sandbox.control.setFaults({ deliveries: { receiverDown: true } })
    create('A')
    create('B')
    await h.sandbox.control.drainDeliveries()
    expect(ids()).toEqual([])
    expect(h.sandbox.control.crm.hooks()[0]).toMatchObject({ failed: 2, failed_at: expect.any(String) })
    h.sandbox.control.setFaults({ deliveries: { receiverDown: false } })
    const c = create('C')
    await h.sandbox.control.drainDeliveries()
    expect(ids()).toEqual([c])
    expect(h.sandbox.control.counters().deliveries).toMatchObject({ failed: 2, succeeded: 1 })
  })

  it('drops a fraction of deliveries, the same ones for the same seed', async () => {
    const run = async () => {
      const h = await harness({ seed: 7, faults: { deliveries: { dropRate: 0.5 } } })
      const { create, ids } = await hooked(h)
      const names = Array.from({ length: 20 }, (_, i) => `P${i}`)
      const created = names.map(create)
      await h.sandbox.control.drainDeliveries()
      return ids().map((id) => created.indexOf(id))
    }
    const first = await run()
    expect(first.length).toBeGreaterThan(2)
    expect(first.length).toBeLessThan(18)
    expect(await run()).toEqual(first)
  })
})

describe('API faults', () => {
  it('answers a fraction of calls with 500 (HTML, nothing changed) and counts them', async () => {
    const h = await harness({ faults: { crm: { errorRate: 1 } } })
    const failed = await h.crm.send('POST', 'people', { person: { name: 'Lost' } })
    expect(failed.status).toBe(500)
    expect(failed.headers.get('content-type')).toContain('text/html')
    expect(h.sandbox.control.crm.liveIds('people')).toEqual([])
    h.sandbox.control.setFaults({ crm: { errorRate: 0.5 } })
    const statuses = []
    for (let i = 0; i < 30; i++) statuses.push((await h.crm.get('people')).status)
    expect(statuses).toContain(500)
    expect(statuses).toContain(200)
    const counters = h.sandbox.control.counters().crm
    expect(counters.injectedErrors).toBe(1 + statuses.filter((status) => status === 500).length)
    expect(counters.statuses['500']).toBe(counters.injectedErrors)
  })

  it('answers calls with 429 and Retry-After on top of the rate limit', async () => {
    const h = await harness({ faults: { reservation: { throttleRate: 1 } } })
    const throttled = await h.reservation.get('contacts')
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const counters = h.sandbox.control.counters().reservation
    expect(counters.injectedThrottles).toBe(1)
    // Its quiet is counted apart from that of the rate limit's 429s, which a client can avoid.
    expect(counters.injectedRetryAfterMs).toBe(Number(throttled.headers.get('retry-after')) * 1000)
    expect((await h.crm.get('people')).status).toBe(200)
  })

  it('adds latency', async () => {
    const h = await harness()
    h.sandbox.control.setFaults({ crm: { latencyMs: 150 } })
    const started = performance.now()
    expect((await h.crm.get('people')).status).toBe(200)
    expect(performance.now() - started).toBeGreaterThanOrEqual(145)
  })
})

describe('control API over HTTP', () => {
  it('sets and resets faults, reads counters and behaviour, and refuses invalid settings', async () => {
    const h = await harness()
    const patched = await h.crm.raw('/__sandbox/faults', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ crm: { errorRate: 1 } }),
    })
    expect(patched.body.crm.errorRate).toBe(1)
    expect((await h.crm.get('people')).status).toBe(500)
    const invalid = await h.crm.raw('/__sandbox/faults', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ crm: { errorRate: 2 } }),
    })
    expect(invalid.status).toBe(422)
    await h.reservation.raw('/__sandbox/faults', { method: 'DELETE' })
    expect((await h.crm.get('people')).status).toBe(200)
    const counters = await h.crm.raw('/__sandbox/counters')
    expect(counters.body.crm).toMatchObject({ requests: 2, statuses: { '200': 1, '500': 1 } })
    expect(counters.body.crm.routes).toEqual({ 'GET /api/people': 2 })
    const behaviour = await h.crm.raw('/__sandbox/behaviour', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ maxPerpage: 500 }),
    })
    expect(behaviour.body).toMatchObject({
      maxPerpage: 500,
      crmRateLimit: { requests: 50, windowSeconds: 10 },
    })
  })

  it('changes records as a user of the UI would, firing webhooks, and shows the ground truth', async () => {
    const h = await harness()
    const target = await receiver()
    await addHook(h, { model: 'person', event: 'destroy', target_url: target.url, object_type: 'lean' })
    const json = { 'content-type': 'application/json' }
    const created = await h.crm.raw('/__sandbox/crm/people', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'Mustermann' }),
    })
    expect(created.status).toBe(201)
    expect(created.body.created_by_user_id).not.toBe((await h.crm.get('users')).body[0].user.id)
    const id = created.body.id
    await h.crm.raw(`/__sandbox/crm/people/${id}/tags`, {
      method: 'POST',
      headers: json,
      body: '{"name":"VIP"}',
    })
    expect((await h.crm.raw(`/__sandbox/crm/people/${id}`)).body.tags[0].name).toBe('VIP')
    expect((await h.crm.raw(`/__sandbox/crm/people/${id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await h.crm.raw('/__sandbox/crm/people')).body).toEqual({ live: [], deleted: [id] })
    const drained = await h.crm.raw('/__sandbox/deliveries/drain', { method: 'POST' })
    expect(drained.body).toMatchObject({ queued: 1, succeeded: 1 })
    expect(target.received[0]?.body).toEqual({ model: 'person', event: 'destroy', record_id: id })
    const invalid = await h.crm.raw('/__sandbox/crm/people', { method: 'POST', headers: json, body: '{}' })
    expect(invalid).toMatchObject({ status: 422, body: { errors: { name: ["can't be blank"] } } })
    expect(
      (await h.crm.raw('/__sandbox/crm/people/1', { method: 'PATCH', headers: json, body: '{}' })).status,
    ).toBe(404)
    expect(h.sandbox.control.counters().crm.requests).toBe(2) // the control API spends no API calls
  })

  it('seeds over HTTP', async () => {
    const h = await harness()
    const json = { 'content-type': 'application/json' }
    const seeded = await h.reservation.raw('/__sandbox/seed', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ count: { contacts: 12, bookings: 4 } }),
    })
    expect(seeded.status).toBe(200)
    expect((await h.reservation.raw('/__sandbox/reservation/contacts')).body.live).toHaveLength(12)
    expect((await h.reservation.raw('/__sandbox/reservation/bookings')).body.live).toHaveLength(4)
  })
})
