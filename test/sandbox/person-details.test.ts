// A person's historic events and assistants: seeded for some people, in no include, on routes of their
// own paged at most 10 items a page whatever perpage asks (`nestedPageSize` the kinder variant), written
// there or with the person's nested attributes, silently unless `detailChangesTouchPerson` is set, and
// moved to the winner of a merge.
import { describe, expect, it } from 'vitest'
import { addHook, type Harness, harness, receiver } from './helpers.ts'

type Item = { id: number; [key: string]: unknown }

/** Person updates as `person update <id>`, read after the deliveries drain. */
async function personUpdates(h: Harness) {
  const target = await receiver()
  await addHook(h, { model: 'person', event: 'update', target_url: target.url, object_type: 'lean' })
  return async () => {
    await h.sandbox.control.drainDeliveries()
    return target.received.map((d) => `${d.body.model} ${d.body.event} ${d.body.record_id}`)
  }
}

/** A seeded person with at least 12 items in the list. */
function personWithMany(h: Harness, list: 'historic_events' | 'assis'): { id: number; items: Item[] } {
  const { crm } = h.sandbox.control
  for (const id of crm.liveIds('people')) {
    const items = crm.personDetails(id)?.[list] ?? []
    if (items.length >= 12) return { id, items }
  }
  throw new Error(`no seeded person with 12 ${list}`)
}

describe('seeded historic events and assistants', () => {
  it('gives about 60% of people a birthday, some another event or assistants, a few a dozen or more', async () => {
    const h = await harness({ seedSize: { people: 1000 } })
    const { crm } = h.sandbox.control
    const all = crm.liveIds('people').map((id) => crm.personDetails(id) ?? { historic_events: [], assis: [] })
    const share = (test: (details: (typeof all)[number]) => boolean) => all.filter(test).length / all.length
    expect(share((d) => d.historic_events.some((event) => event.atype === 'birthday'))).toBeCloseTo(0.6, 1)
    expect(share((d) => d.historic_events.some((event) => event.atype !== 'birthday'))).toBeGreaterThan(0.05)
    expect(share((d) => d.assis.length > 0)).toBeGreaterThan(0.05)
    expect(share((d) => d.historic_events.length >= 12 || d.assis.length >= 12)).toBeGreaterThan(0)
    const items = all.flatMap((d) => [...d.historic_events, ...d.assis])
    expect(new Set(items.map((item) => item.id)).size).toBe(items.length)
    const forms = new Set(
      all.flatMap((d) => d.historic_events.map((e) => String(e.unparsed_date).replace(/\d/g, '9'))),
    )
    expect([...forms].sort()).toEqual(['99.99.', '99.99.9999', '9999-99-99'])
    const fields = (list: 'historic_events' | 'assis') =>
      Object.keys(all.find((d) => d[list][0])?.[list][0] ?? {})
    expect(fields('historic_events')).toEqual([
      'id',
      'unparsed_date',
      'atype',
      'desc',
      'created_at',
      'updated_at',
    ])
    expect(fields('assis')).toEqual(['id', 'name', 'tel', 'email', 'created_at', 'updated_at'])
  })

  it('are in no include: the index and show of people never carry them', async () => {
    const h = await harness({ seedSize: { people: 1000 } })
    const { id } = personWithMany(h, 'historic_events')
    const show = await h.crm.get(`people/${id}`, { includes: 'all', methods: 'all' })
    expect(show.body.person).not.toHaveProperty('historic_events')
    expect(show.body.person).not.toHaveProperty('assis')
    const index = await h.crm.get('people', { includes: 'all', perpage: 250 })
    const keys = new Set(index.body.flatMap((w: { person: object }) => Object.keys(w.person)))
    expect(keys.has('historic_events') || keys.has('assis')).toBe(false)
  })
})

describe("the routes of a person's historic events and assistants", () => {
  it('list the items wrapped, in order, at most 10 a page whatever perpage asks; a page past the end is []', async () => {
    const h = await harness({ seedSize: { people: 1000 } })
    for (const [list, wrapper] of [
      ['historic_events', 'historic_event'],
      ['assis', 'assi'],
    ] as const) {
      const { id, items } = personWithMany(h, list)
      const page = async (query: Record<string, number>) =>
        (await h.crm.get(`people/${id}/${list}`, query)).body
      const wrapped = (slice: Item[]) => slice.map((item) => ({ [wrapper]: item }))
      expect(await page({ page: 1, perpage: 250 })).toEqual(wrapped(items.slice(0, 10)))
      expect(await page({ page: 2, perpage: 250 })).toEqual(wrapped(items.slice(10, 20)))
      expect(await page({ page: Math.ceil(items.length / 10) + 1, perpage: 250 })).toEqual([])
      expect(await page({ page: 2, perpage: 5 })).toEqual(wrapped(items.slice(5, 10)))
      expect((await h.crm.get(`people/${id}/${list}.json`)).body).toEqual(wrapped(items.slice(0, 10)))
      const first = items[0] as Item
      expect((await h.crm.get(`people/${id}/${list}/${first.id}`)).body).toEqual({ [wrapper]: first })
    }
  })

  it('honour perpage up to 500 with the kinder nestedPageSize', async () => {
    const h = await harness({ seedSize: { people: 1000 }, behaviour: { nestedPageSize: 500 } })
    const { id, items } = personWithMany(h, 'historic_events')
    const all = await h.crm.get(`people/${id}/historic_events`, { page: 1, perpage: 250 })
    expect(all.body).toEqual(items.map((item) => ({ historic_event: item })))
  })

  it('answer 404 for an unknown or deleted person and an unknown item', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const gone = crm.create('people', { name: 'Weg' })
    crm.destroy('people', gone.id)
    const person = crm.create('people', { name: 'Da' })
    for (const path of [
      'people/1/historic_events',
      `people/${gone.id}/assis`,
      `people/${person.id}/assis/1`,
    ]) {
      const answer = await h.crm.get(path)
      expect(answer.status, path).toBe(404)
      expect(answer.body).toMatchObject({ error: 'not-found' })
    }
    expect(
      (await h.crm.send('POST', `people/${gone.id}/historic_events`, { historic_event: {} })).status,
    ).toBe(404)
    expect(
      (await h.crm.send('PUT', `people/${person.id}/historic_events/1`, { historic_event: {} })).status,
    ).toBe(404)
    expect((await h.crm.send('DELETE', `people/${person.id}/assis/1`, {})).status).toBe(404)
  })

  it('pass the API gate like every route: the key, the rate limit and the counters', async () => {
    const h = await harness({ behaviour: { crmRateLimit: { requests: 2, windowSeconds: 10 } } })
    const person = h.sandbox.control.crm.create('people', { name: 'Mustermann' })
    expect((await h.crm.raw(`/api/people/${person.id}/historic_events`)).status).toBe(401)
    expect((await h.crm.get(`people/${person.id}/historic_events`)).body).toEqual([])
    expect((await h.crm.get(`people/${person.id}/assis`)).body).toEqual([])
    expect((await h.crm.get(`people/${person.id}/assis`)).status).toBe(429)
    expect(h.sandbox.control.counters().crm.routes).toMatchObject({
      'GET /api/people/:id/historic_events': 2,
      'GET /api/people/:id/assis': 2,
    })
  })
})

describe('writes of historic events and assistants', () => {
  /** Creates, changes and removes items over the API; the person before, and the items left. */
  async function writeSome(h: Harness) {
    const person = h.sandbox.control.crm.create('people', { name: 'Mustermann' })
    h.clock.advance(5_000)
    const event = await h.crm.send('POST', `people/${person.id}/historic_events`, {
      historic_event: { unparsed_date: '12.03.1984', atype: 'birthday', desc: 'Geburtstag' },
    })
    expect(event).toMatchObject({
      status: 201,
      body: { historic_event: { unparsed_date: '12.03.1984', atype: 'birthday', desc: 'Geburtstag' } },
    })
    const assi = await h.crm.send('POST', `people/${person.id}/assis`, { name: 'Eva Engel', tel: '0341 123' })
    expect(assi).toMatchObject({
      status: 201,
      body: { assi: { name: 'Eva Engel', tel: '0341 123', email: null } },
    })
    const other = await h.crm.send('POST', `people/${person.id}/assis`, { assi: { name: 'Olaf' } })
    const eventPath = `people/${person.id}/historic_events/${event.body.historic_event.id}`
    expect(await h.crm.send('PUT', eventPath, { historic_event: { desc: null } })).toMatchObject({
      status: 200,
      text: '',
    })
    const assiPath = `people/${person.id}/assis/${assi.body.assi.id}`
    expect(await h.crm.send('PATCH', assiPath, { email: 'eva@example.de' })).toMatchObject({
      status: 200,
      text: '',
    })
    const otherPath = `people/${person.id}/assis/${other.body.assi.id}`
    expect(await h.crm.send('DELETE', otherPath, {})).toMatchObject({ status: 200, text: '' })
    expect((await h.crm.send('POST', `people/${person.id}/assis`, { assi: { name: 5 } })).status).toBe(422)
    return person
  }

  it('change nothing of the person by default: no updated_at, no webhook, no activity', async () => {
    const h = await harness()
    const updates = await personUpdates(h)
    const person = await writeSome(h)
    const { crm } = h.sandbox.control
    expect(crm.personDetails(person.id)).toMatchObject({
      historic_events: [{ unparsed_date: '12.03.1984', atype: 'birthday', desc: null }],
      assis: [{ name: 'Eva Engel', tel: '0341 123', email: 'eva@example.de' }],
    })
    expect(crm.get('people', person.id)?.updated_at).toBe(person.updated_at)
    expect(await updates()).toEqual([])
    expect(h.sandbox.control.counters().changes).toEqual({ 'person.create': 1 })
  })

  it('bump the person and send its update with the kinder detailChangesTouchPerson', async () => {
    const h = await harness({ behaviour: { detailChangesTouchPerson: true } })
    const updates = await personUpdates(h)
    const person = await writeSome(h)
    expect(h.sandbox.control.crm.get('people', person.id)?.updated_at).not.toBe(person.updated_at)
    // Six changes: two of events, four of assistants (the refused one changes nothing).
    expect(await updates()).toEqual(Array(6).fill(`person update ${person.id}`))
  })

  it("come with a person's nested attributes on create and update, keyed by index strings", async () => {
    const h = await harness()
    const created = await h.crm.send('POST', 'people', {
      person: {
        name: 'Mustermann',
        historic_events_attributes: { '0': { unparsed_date: '1984-03-12', atype: 'birthday' } },
        assis_attributes: { '0': { name: 'Eva Engel', email: 'eva@example.de' } },
      },
    })
    const id = created.body.person.id
    expect(created.body.person).not.toHaveProperty('historic_events')
    const { crm } = h.sandbox.control
    const [event] = crm.personDetails(id)?.historic_events ?? []
    const updated = await h.crm.send('PUT', `people/${id}`, {
      person: {
        historic_events_attributes: {
          '0': { id: event?.id, desc: 'Geburtstag' },
          '1': { unparsed_date: '12.03.', atype: 'anniversary' },
        },
      },
    })
    expect(updated.status).toBe(200)
    expect(crm.personDetails(id)).toMatchObject({
      historic_events: [
        { id: event?.id, unparsed_date: '1984-03-12', atype: 'birthday', desc: 'Geburtstag' },
        { unparsed_date: '12.03.', atype: 'anniversary', desc: null },
      ],
      assis: [{ name: 'Eva Engel', tel: null, email: 'eva@example.de' }],
    })
  })
})

describe('the control API of historic events and assistants', () => {
  it("changes one person's items at random, silently, as the routes then show", async () => {
    const h = await harness({ seedSize: { people: 20 } })
    const updates = await personUpdates(h)
    const { crm } = h.sandbox.control
    const [id] = crm.liveIds('people') as [number]
    const before = crm.get('people', id)?.updated_at
    const done = new Set<string>()
    for (let i = 0; i < 30; i++) {
      const change = crm.changePersonDetails(id)
      done.add(change.change)
      const ids = (crm.personDetails(id)?.[change.list] ?? []).map((item) => item.id)
      expect(ids.includes(change.id)).toBe(change.change !== 'removed')
    }
    expect([...done].sort()).toEqual(['added', 'changed', 'removed'])
    const listed = (await h.crm.get(`people/${id}/assis`, { perpage: 10 })).body
    expect(listed).toEqual(
      crm
        .personDetails(id)
        ?.assis.slice(0, 10)
        .map((assi) => ({ assi })),
    )
    expect(crm.get('people', id)?.updated_at).toBe(before)
    expect(await updates()).toEqual([])
    expect(() => crm.changePersonDetails(1)).toThrow(/no people 1/)
  })

  it('draws from the random source given: the same numbers, the same changes', async () => {
    const run = async (numbers: number[]) => {
      const h = await harness({ seedSize: { people: 5 } })
      const { crm } = h.sandbox.control
      const id = crm.liveIds('people')[2] as number
      let drawn = 0
      const next = () => numbers[drawn++ % numbers.length] as number
      for (let i = 0; i < 10; i++) crm.changePersonDetails(id, next)
      return crm.personDetails(id)
    }
    const first = await run([0.1, 0.5, 0.9, 0.3, 0.7])
    expect(await run([0.1, 0.5, 0.9, 0.3, 0.7])).toEqual(first)
    expect(await run([0.8, 0.2, 0.6])).not.toEqual(first)
  })
})

describe('merging people', () => {
  it("appends the losers' historic events and assistants to the winner's own, in order", async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const winner = crm.create('people', { name: 'Mustermann' })
    const loser = crm.create('people', { name: 'Musterman' })
    const own = crm.addPersonDetail(winner.id, 'historic_events', {
      unparsed_date: '12.03.',
      atype: 'birthday',
    })
    const first = crm.addPersonDetail(loser.id, 'historic_events', {
      unparsed_date: '1984-03-12',
      atype: 'birthday',
    })
    const second = crm.addPersonDetail(loser.id, 'historic_events', {
      unparsed_date: '01.05.',
      atype: 'anniversary',
    })
    const assi = crm.addPersonDetail(loser.id, 'assis', { name: 'Eva Engel' })
    crm.merge('people', winner.id, [loser.id])
    expect(crm.personDetails(winner.id)).toEqual({ historic_events: [own, first, second], assis: [assi] })
    expect((await h.crm.get(`people/${loser.id}/historic_events`)).status).toBe(404)
  })
})
