// The CRM simulator over real HTTP: auth, errors, wrapping, paging, ordering, includes, counts.
import { describe, expect, it } from 'vitest'
import { harness } from './helpers.ts'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000\+01:00$/

describe('CRM authentication and errors', () => {
  it('answers 401 without the key or with a wrong one, and takes it as parameter or X-apikey header', async () => {
    const { sandbox, crm } = await harness()
    const none = await crm.raw('/api/people')
    expect(none.status).toBe(401)
    expect(none.body).toEqual({ error: 'not authorized', description: 'not authorized' })
    expect((await crm.raw('/api/people?apikey=wrong')).status).toBe(401)
    expect((await crm.raw('/api/people', { headers: { 'X-apikey': sandbox.crmApiKey } })).status).toBe(200)
    expect((await crm.get('people')).status).toBe(200)
  })

  it('answers 404 for unknown ids and routes', async () => {
    const { crm } = await harness()
    expect((await crm.get('people/123')).status).toBe(404)
    expect((await crm.send('PUT', 'people/123', { person: { name: 'X' } })).status).toBe(404)
    expect((await crm.send('DELETE', 'deals/123', {})).status).toBe(404)
    expect((await crm.get('no_such_things')).status).toBe(404)
  })

  it('answers 422 with field errors for invalid records, 400 without the wrapper, 415 for non-JSON', async () => {
    const { sandbox, crm } = await harness()
    const invalid = await crm.send('POST', 'people', { person: { first_name: 'Maxi' } })
    expect(invalid.status).toBe(422)
    expect(invalid.body).toEqual({ name: ["can't be blank"] })
    const deal = await crm.send('POST', 'deals', { deal: { name: 'Deal', value: 'lots' } })
    expect(deal.status).toBe(422)
    expect(Object.keys(deal.body).sort()).toEqual(['target_date', 'value', 'value_count', 'value_type'])
    const unwrapped = await crm.send('POST', 'people', { name: 'Mustermann' })
    expect(unwrapped.status).toBe(400)
    expect(unwrapped.body.error).toBe('param-missing')
    const text = await crm.raw(`/api/people?apikey=${sandbox.crmApiKey}`, { method: 'POST', body: 'name=x' })
    expect(text.status).toBe(415)
  })
})

describe('CRM records', () => {
  it('wraps records under their singular name; create answers the record, update and delete 200 without body', async () => {
    const { crm } = await harness()
    const created = await crm.send('POST', 'people.json', {
      person: { name: 'Mustermann', first_name: 'Maxi', tags_attributes: { '0': { name: 'VIP' } } },
    })
    expect(created.status).toBe(201)
    const person = created.body.person
    expect(person).toMatchObject({
      name: 'Mustermann',
      first_name: 'Maxi',
      gender: 'female_auto',
      account_id: 87444,
    })
    expect(person.id).toBeGreaterThan(30_000_000)
    expect(person.created_at).toMatch(TIMESTAMP)

    const updated = await crm.send('PUT', `people/${person.id}`, { person: { title: 'Dr.' } })
    expect(updated).toMatchObject({ status: 200, text: '' })
    const shown = await crm.get(`people/${person.id}.json`, { includes: 'tags' })
    expect(shown.body.person.title).toBe('Dr.')
    expect(shown.body.person.tags).toEqual([
      expect.objectContaining({ name: 'VIP', attachable_type: 'Person' }),
    ])

    expect(await crm.send('DELETE', `people/${person.id}`, {})).toMatchObject({ status: 200, text: '' })
    expect((await crm.get(`people/${person.id}`)).status).toBe(404)
  })

  it('shapes people like the real example, with integer genders among the strings', async () => {
    const { crm } = await harness({ seedSize: 60 })
    const page = await crm.get('people', { perpage: 60, includes: 'tags addrs' })
    const people = page.body.map((wrapped: { person: unknown }) => wrapped.person)
    expect(Object.keys(people[0])).toEqual([
      'id',
      'account_id',
      'user_id',
      'country_code',
      'salutation',
      'title',
      'gender',
      'first_name',
      'name',
      'background',
      'created_by_user_id',
      'updated_by_user_id',
      'created_at',
      'updated_at',
      'tags',
      'addrs',
    ])
    expect(people.some((p: { gender: unknown }) => typeof p.gender === 'number')).toBe(true)
    expect(people.some((p: { gender: unknown }) => typeof p.gender === 'string')).toBe(true)
    const addr = people.flatMap((p: { addrs: unknown[] }) => p.addrs)[0]
    expect(Object.keys(addr)).toEqual([
      'id',
      'attachable_id',
      'attachable_type',
      'street',
      'zip',
      'city',
      'state_code',
      'country_code',
      'primary',
      'atype',
      'country_name',
      'created_at',
      'updated_at',
    ])
    const tag = people.flatMap((p: { tags: unknown[] }) => p.tags)[0]
    expect(Object.keys(tag)).toEqual([
      'id',
      'account_id',
      'attachable_id',
      'attachable_type',
      'api_input',
      'name',
      'created_at',
      'updated_at',
    ])
    const seconds = people.map((p: { updated_at: string }) => p.updated_at)
    expect(new Set(seconds).size).toBeLessThan(seconds.length) // many records share a second
  })

  it('returns deal money as decimal strings, accepts day-month-year dates, and finishes won deals', async () => {
    const { crm, clock } = await harness()
    const created = await crm.send('POST', 'deals', {
      deal: {
        name: 'Wartung',
        value: 1500,
        value_type: 'Monatlich',
        value_count: 12,
        target_date: '31.12.2024',
      },
    })
    expect(created.body.deal).toMatchObject({
      value: '1500.0',
      value_count: '12.0',
      currency: 'EUR',
      target_date: '2024-12-31',
      current_state: 'open_0',
      finished_at: null,
    })
    clock.advance(5_000)
    await crm.send('PUT', `deals/${created.body.deal.id}`, { deal: { current_state: 'won' } })
    const won = (await crm.get(`deals/${created.body.deal.id}`)).body.deal
    expect(won.current_state).toBe('won')
    expect(won.finished_at).toBe(won.updated_at)
    const stats = await crm.get('deals/stats')
    expect(stats.body).toEqual({ total_entries: 1, sum: 18000, currency: 'EUR' })
  })

  it('gives companies and tasks their extra keys', async () => {
    const { crm } = await harness({ seedSize: 5 })
    const company = (await crm.get('companies', { perpage: 1 })).body[0].company
    expect(company).toHaveProperty('is_own')
    expect(company).toHaveProperty('demo')
    expect(company).toHaveProperty('import_log_id')
    const task = (await crm.get('tasks', { perpage: 1, includes: 'all' })).body[0].task
    for (const key of ['comments_count', 'end_time', 'fuzzy', 'entire_day', 'attachable', 'user']) {
      expect(task).toHaveProperty(key)
    }
  })
})

describe('CRM index pages', () => {
  it('pages with perpage (default 25, at most 250 unless set higher) and page', async () => {
    const { sandbox, crm } = await harness({ seedSize: { people: 530 } })
    expect((await crm.get('people')).body).toHaveLength(25)
    expect((await crm.get('people', { perpage: 1000 })).body).toHaveLength(250)
    expect((await crm.get('people', { perpage: 500, page: 3 })).body).toHaveLength(30)
    expect((await crm.get('people', { perpage: 500, page: 4 })).body).toEqual([])
    // the document's 500, as a variant named
    sandbox.control.setBehaviour({ maxPerpage: 500 })
    expect((await crm.get('people', { perpage: 1000 })).body).toHaveLength(500)
    expect((await crm.get('people', { perpage: 500, page: 2 })).body).toHaveLength(30)
    const ids = new Set<number>()
    for (let page = 1; page <= 6; page++) {
      for (const { person } of (await crm.get('people', { perpage: 100, page })).body) ids.add(person.id)
    }
    expect(ids.size).toBe(530)
  })

  it('caps perpage lower than requested when the knob says so', async () => {
    const { sandbox, crm } = await harness({ seedSize: { companies: 40 } })
    sandbox.control.setBehaviour({ maxPerpage: 10 })
    expect((await crm.get('companies', { perpage: 25 })).body).toHaveLength(10)
    expect((await crm.get('companies', { perpage: 25, page: 4 })).body).toHaveLength(10)
    expect((await crm.get('companies', { perpage: 25, page: 5 })).body).toHaveLength(0)
  })

  it('orders by updated_at, created_at and name in both directions, same-second ties by id', async () => {
    const { crm } = await harness({ seedSize: { people: 200 }, behaviour: { tieOrder: 'by-id' } })
    const all = async (order: string) =>
      (await crm.get('people', { perpage: 500, order })).body.map(
        (w: { person: Record<string, never> }) => w.person,
      )
    const desc = await all('updated_at-desc')
    for (let i = 1; i < desc.length; i++) {
      const [a, b] = [desc[i - 1], desc[i]]
      expect(
        Date.parse(a.updated_at) > Date.parse(b.updated_at) || (a.updated_at === b.updated_at && a.id < b.id),
      ).toBe(true)
    }
    const asc = await all('updated_at-asc')
    expect(asc[0].updated_at <= asc[asc.length - 1].updated_at).toBe(true)
    const created = await all('created_at-asc')
    expect(created.map((p: { created_at: string }) => p.created_at)).toEqual(
      created.map((p: { created_at: string }) => p.created_at).sort(),
    )
    const names = (await all('name-asc')).map((p: { name: string }) => p.name)
    expect(names[0].localeCompare(names[names.length - 1], 'de')).toBeLessThanOrEqual(0)
  })

  it('falls back to name-asc for orders it does not know, such as the hyphenated spelling', async () => {
    const { crm } = await harness({ seedSize: { people: 50 }, behaviour: { tieOrder: 'by-id' } })
    const byName = await crm.get('people', { perpage: 50, order: 'name-asc' })
    expect((await crm.get('people', { perpage: 50, order: 'updated-at-desc' })).body).toEqual(byName.body)
    expect((await crm.get('people', { perpage: 50 })).body).toEqual(byName.body)
  })

  it('orders same-second ties anew on every request by default, each page keeping its positions', async () => {
    const { crm } = await harness({ seedSize: { people: 300 }, seedTies: 60 })
    const page = async (n: number) =>
      (await crm.get('people', { perpage: 25, page: n, order: 'updated_at-desc' })).body.map(
        (w: { person: { id: number; updated_at: string } }) => w.person,
      )
    const orders = new Set<string>()
    for (let i = 0; i < 8; i++) {
      const pages = [...(await page(1)), ...(await page(2)), ...(await page(3)), ...(await page(4))]
      const stamps = pages.map((p) => p.updated_at)
      // The timestamps at each position never change; the records within a second do.
      expect(stamps).toEqual([...stamps].sort().reverse())
      orders.add(pages.map((p) => p.id).join())
    }
    expect(orders.size).toBeGreaterThan(1)
  })

  it('renders includes as arrays inside the record, space separated or all', async () => {
    const { crm } = await harness({ seedSize: 10 })
    const some = (await crm.get('people', { perpage: 1, includes: 'tags emails' })).body[0].person
    expect(Array.isArray(some.tags)).toBe(true)
    expect(Array.isArray(some.emails)).toBe(true)
    expect(some).not.toHaveProperty('addrs')
    const commas = (await crm.get('people', { perpage: 1, includes: 'tags,emails' })).body[0].person
    expect(commas).not.toHaveProperty('tags') // the separator is a space
    const all = (await crm.get('people', { perpage: 1, includes: 'all' })).body[0].person
    for (const key of [
      'positions',
      'companies',
      'tags',
      'tels',
      'emails',
      'homepages',
      'addrs',
      'custom_fields',
      'connections',
    ]) {
      expect(Array.isArray(all[key])).toBe(true)
    }
    expect(all).toHaveProperty('avatar') // an object, or null
    const deal = (await crm.get('deals', { perpage: 10, includes: 'people company tags' })).body.find(
      (w: { deal: { people: unknown[] } }) => w.deal.people.length,
    ).deal
    expect(deal.people[0]).toHaveProperty('first_name')
    expect(deal).toHaveProperty('company')
  })

  it('counts, filters by field and tag, and searches by name', async () => {
    const { sandbox, crm, clock } = await harness({ seedSize: { companies: 30 } })
    expect((await crm.get('companies/count')).body).toEqual({ total_entries: 30 })
    expect((await crm.get('companies/stats')).body).toEqual({ total_entries: 30 })
    clock.advance(60_000)
    const fresh = sandbox.control.crm.create('companies', { name: 'Zebra Zuchtbetrieb GmbH' })
    const after = await crm.get('companies', { 'filter[updated_at][larger_than]': String(fresh.updated_at) })
    expect(after.body).toEqual([])
    const since = await crm.get('companies', { 'filter[updated_at][larger_than]': '2024-06-03T08:00:30Z' })
    expect(since.body.map((w: { company: { id: number } }) => w.company.id)).toEqual([fresh.id])
    const tag = sandbox.control.crm.addTag('companies', fresh.id, 'Zoo')
    expect((await crm.get('companies', { tag_name: 'Zoo' })).body).toHaveLength(1)
    expect((await crm.get('companies', { tag_id: tag.id })).body).toHaveLength(1)
    const found = (await crm.get('companies/search', { name: 'zebra' })).body
    expect(found.map((w: { company: { id: number } }) => w.company.id)).toEqual([fresh.id])
    expect(found[0].company.created_at).toBe('2024-06-03T08:01:00.000Z') // one real search answered in UTC
    expect((await crm.get('companies/search')).status).toBe(400)
    expect((await crm.get('companies/search', { name: 'nothing like it' })).body).toEqual([])
  })

  it("restricts people to a deal's, and adds the responsible user's name on request", async () => {
    const { sandbox, crm } = await harness({ seedSize: { people: 10 } })
    const [first, second] = sandbox.control.crm.liveIds('people') as [number, number]
    const deal = sandbox.control.crm.create('deals', {
      name: 'Workshop',
      value: 1,
      value_type: 'Total',
      value_count: 1,
      target_date: '2024-08-01',
      person_ids_set: `${first},${second}`,
    })
    const members = await crm.get('people', { deal_id: deal.id, perpage: 50 })
    expect(members.body.map((w: { person: { id: number } }) => w.person.id).sort()).toEqual(
      [first, second].sort(),
    )
    const user = (await crm.get('users')).body[0].user
    await crm.send('PUT', `people/${first}`, { person: { user_id: user.id } })
    const shown = await crm.get(`people/${first}`, { methods: 'all' })
    expect(shown.body.person).toMatchObject({
      responsible_user_natural_name: `${user.first} ${user.name}`,
      user: { id: user.id, login: user.login },
      salutation_informal: expect.any(String),
    })
  })

  it('lists users and the account tags', async () => {
    const { sandbox, crm } = await harness()
    const users = (await crm.get('users')).body
    expect(users[0].user).toEqual({
      id: expect.any(Number),
      first: 'Erika',
      name: 'Musterfrau',
      login: expect.any(String),
    })
    expect((await crm.get('users/search', { name: 'beispiel' })).body).toHaveLength(1)
    const person = sandbox.control.crm.create('people', { name: 'Tagged' })
    sandbox.control.crm.addTag('people', person.id, 'Kunde')
    expect((await crm.get('tags/list', { attachable_type: 'Person' })).body).toEqual(['Kunde'])
  })
})

describe('avatars and connections of people and companies', () => {
  it('are seeded for some: an avatar object, connections of two shapes, some items without an id', async () => {
    const { crm } = await harness({ seedSize: { people: 60, companies: 20 } })
    const includes = 'avatar connections'
    const people = (await crm.get('people', { perpage: 60, includes })).body.map(
      (w: { person: unknown }) => w.person,
    )
    const companies = (await crm.get('companies', { perpage: 20, includes })).body.map(
      (w: { company: unknown }) => w.company,
    )
    const records = [...people, ...companies] as { avatar: unknown; connections: Record<string, unknown>[] }[]
    const avatars = records.flatMap((record) => (record.avatar ? [record.avatar] : []))
    expect(avatars.length).toBeGreaterThan(5)
    expect(records.filter((record) => record.avatar === null).length).toBeGreaterThan(5)
    expect(avatars[0]).toMatchObject({
      id: expect.any(Number),
      content_type: expect.stringMatching(/^image\//),
    })
    const items = records.flatMap((record) => record.connections)
    expect(items.filter((item) => 'id' in item && 'connectable_id' in item).length).toBeGreaterThan(5)
    expect(items.filter((item) => !('id' in item)).length).toBeGreaterThan(0)
    expect(records.filter((record) => record.connections.length === 0).length).toBeGreaterThan(5)
  })

  it('change through the control API: a new avatar or none, connections added, changed and removed', async () => {
    const { sandbox, crm } = await harness()
    const control = sandbox.control.crm
    const person = control.create('people', { name: 'Mustermann' })
    const company = control.create('companies', { name: 'Kranich AG' })
    const shown = async () =>
      (await crm.get(`people/${person.id}`, { includes: 'avatar connections' })).body.person
    expect(await shown()).toMatchObject({ avatar: null, connections: [] })

    const avatar = control.setAvatar('people', person.id, { filename: 'maxi.png' })
    expect(avatar).toMatchObject({
      attachable_id: person.id,
      content_type: 'image/png',
      file_file_name: 'maxi.png',
    })
    const link = control.addConnection('people', person.id, {
      to: { type: 'Company', id: company.id },
      name: 'Arbeitgeber',
    })
    control.addConnection('people', person.id, { network: 'xing', url: 'https://www.xing.example/maxi' })
    expect(await shown()).toMatchObject({
      avatar,
      connections: [link, { network: 'xing', url: 'https://www.xing.example/maxi' }],
    })
    control.updateConnection('people', person.id, 0, { name: 'Lieferant' })
    control.removeConnection('people', person.id, 1)
    expect(control.setAvatar('people', person.id, null)).toBeNull()
    expect(await shown()).toMatchObject({
      avatar: null,
      connections: [{ ...link, name: 'Lieferant', updated_at: expect.any(String) }],
    })
    expect(() => control.removeConnection('people', person.id, 1)).toThrow(/no connection at 1/)
    expect(() =>
      control.addConnection('people', person.id, { to: { type: 'Person', id: 1 }, name: 'x' }),
    ).toThrow(/invalid connection/)
    expect(() => control.setAvatar('companies', 1, null)).toThrow(/no companies 1/)
  })
})

describe('CRM sub-objects', () => {
  it('creates, lists, changes and deletes tags and addresses through nested routes', async () => {
    const { crm } = await harness()
    const person = (await crm.send('POST', 'people', { person: { name: 'Mustermann' } })).body.person
    const tag = await crm.send('POST', `people/${person.id}/tags`, { tag: { name: 'NEW-FANCY-TAG' } })
    expect(tag.status).toBe(201)
    expect(tag.body.tag).toMatchObject({ name: 'NEW-FANCY-TAG', attachable_id: person.id, api_input: true })
    const listed = await crm.get(`people/${person.id}/tags`)
    expect(listed.body[0].tag.attachable).toMatchObject({ id: person.id, name: 'Mustermann' })
    expect((await crm.send('POST', `people/${person.id}/addrs`, { addr: { city: 'Leipzig' } })).status).toBe(
      422,
    )
    const addr = await crm.send('POST', `people/${person.id}/addrs`, {
      addr: { street: 'Markt 1', city: 'Leipzig', country_code: 'de', state_code: 'SN', atype: 'work_hq' },
    })
    expect(addr.body.addr).toMatchObject({ city: 'Leipzig', country_code: 'DE', country_name: 'Deutschland' })
    const addrId = addr.body.addr.id
    expect(
      (await crm.send('PUT', `people/${person.id}/addrs/${addrId}`, { addr: { zip: '04109' } })).text,
    ).toBe('')
    expect((await crm.send('DELETE', `people/${person.id}/tags/${tag.body.tag.id}`, {})).status).toBe(200)
    const shown = (await crm.get(`people/${person.id}`, { includes: 'tags addrs' })).body.person
    expect(shown.tags).toEqual([])
    expect(shown.addrs[0].zip).toBe('04109')
    expect((await crm.get(`deals/1/addrs`)).status).toBe(404)
  })
})
