// The CRM client against a fake CRM: query spelling, authentication, unwrapping, count, show, hooks.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { UpstreamResponseError } from '../../src/api-client/errors.ts'
import { total } from '../../src/api-client/metrics.ts'
import { users } from '../../src/resources/crm.ts'
import { companies, contacts, deals, people, tasks } from '../../src/resources/index.ts'
import { CRM_KEY, CRM_URL, crmClient, person, T0, useNock, useTestDatabase } from './harness.ts'

describe('CRM client', () => {
  const database = useTestDatabase()
  useNock()

  it('asks for an index page with perpage, page, order, includes and filter, and unwraps the records', async () => {
    const { client, metrics } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people')
      .matchHeader('x-apikey', CRM_KEY)
      .query({
        perpage: '250',
        page: '3',
        order: 'updated_at-desc',
        includes: 'tags addrs',
        'filter[updated_at][larger_than]': '2024-01-01T00:00:00Z',
      })
      .reply(200, [
        { person: person(30016185, undefined, { tags: [{ id: 120484083 }] }) },
        { person: person(2) },
      ])

    const page = await client.index(people, {
      page: 3,
      perPage: 250,
      order: { field: 'updated_at', direction: 'desc' },
      includes: ['tags', 'addrs'],
      filter: { updated_at: { larger_than: '2024-01-01T00:00:00Z' } },
    })

    expect(page.records.map((r) => r.id)).toEqual([30016185, 2])
    expect(page.records[0]).toMatchObject({ name: 'Person 30016185', tags: [{ id: 120484083 }] })
    expect(page).toMatchObject({ page: 3, size: 2, rejected: [], fetchedAt: new Date(T0) })
    expect(total(metrics.requests, { upstream: 'crm', route: 'people.index', status: '200' })).toBe(1)
  })

  it("sends the resource's includes and the configured page size when the caller gives none", async () => {
    const { client } = crmClient(database.db, { pageSize: 500 })
    nock(CRM_URL)
      .get('/api/deals')
      .query({ perpage: '500', page: '1', includes: 'tags people custom_fields' })
      .reply(200, [
        { deal: { id: 7, value: '1200.50', value_count: '3.0', updated_at: '2024-05-01T10:00:00Z' } },
      ])
    const page = await client.index(deals)
    expect(page.records).toEqual([
      { id: 7, value: '1200.50', value_count: '3.0', updated_at: '2024-05-01T10:00:00Z' },
    ])
  })

  it('reads users, which carry no updated_at and take no includes', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/users')
      .query({ perpage: '500', page: '1' })
      .reply(200, [{ user: { id: 117760, first: 'Maxi', name: 'Muster', login: 'maxi@example.com' } }])
    const page = await client.index(users)
    expect(page.records).toEqual([{ id: 117760, first: 'Maxi', name: 'Muster', login: 'maxi@example.com' }])
  })

  it('puts the key in the apikey query parameter when configured so, and in no header', async () => {
    const { client } = crmClient(database.db, { auth: 'query' })
    nock(CRM_URL, { badheaders: ['x-apikey'] })
      .get('/api/companies/count')
      .query({ apikey: CRM_KEY })
      .reply(200, { total_entries: 40 })
    expect(await client.count(companies)).toBe(40)
  })

  it('shows one record with includes, unwrapped, and the time its request was sent', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/people/30016185')
      .query({ includes: 'tags addrs tels emails homepages positions custom_fields avatar connections' })
      .reply(200, { person: person(30016185, undefined, { addrs: [{ id: 28752100, city: 'Leipzig' }] }) })
    const result = await client.show(people, 30016185)
    expect(result).toEqual({
      status: 'found',
      record: person(30016185, undefined, { addrs: [{ id: 28752100, city: 'Leipzig' }] }),
      fetchedAt: new Date(T0),
    })
  })

  it('answers a show of a deleted record with gone, once, without retrying', async () => {
    const { client, metrics } = crmClient(database.db)
    nock(CRM_URL).get('/api/tasks/99').reply(404, { error: 'not found' })
    expect(await client.show(tasks, 99)).toEqual({ status: 'gone', fetchedAt: new Date(T0) })
    expect(total(metrics.retries)).toBe(0)
  })

  it('refuses a count whose answer has no total_entries', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL).get('/api/people/count').reply(200, { total: 'many' })
    await expect(client.count(people)).rejects.toBeInstanceOf(UpstreamResponseError)
  })

  it('refuses routes the resource table says the upstream lacks, and resources of the other service', async () => {
    const { client } = crmClient(database.db)
    await expect(client.count(tasks)).rejects.toThrow('crm.tasks has no count route')
    await expect(client.show(users, 1)).rejects.toThrow('crm.users has no show route')
    await expect(client.index(contacts)).rejects.toThrow('not a resource of the crm service')
  })

  it('lists hooks with the model in lower case, creates a hook with a wrapped body, deletes one', async () => {
    const { client } = crmClient(database.db)
    const hook = {
      id: 51,
      model: 'Person',
      event: 'update',
      target_url: 'https://sync.example.com/webhooks/x/person',
      object_type: 'lean',
      verified: true,
      failed: 0,
    }
    const wanted = {
      model: 'person' as const,
      event: 'create' as const,
      target_url: 'https://sync.example.com/webhooks/x/person',
      object_type: 'lean' as const,
    }
    nock(CRM_URL)
      .get('/api/hooks')
      .reply(200, [{ hook }])
      .post('/api/hooks', { hook: wanted })
      .reply(201, { hook: { ...wanted, id: 52 } })
      .delete('/api/hooks/51')
      .reply(200)
      .delete('/api/hooks/50')
      .reply(404)

    expect(await client.listHooks()).toEqual([{ ...hook, model: 'person' }])
    expect(await client.createHook(wanted)).toMatchObject({ id: 52, model: 'person', event: 'create' })
    expect(await client.deleteHook(51)).toBe('deleted')
    expect(await client.deleteHook(50)).toBe('gone')
  })

  it('answers null for a created hook whose answer does not show it', async () => {
    const { client } = crmClient(database.db)
    nock(CRM_URL).post('/api/hooks').reply(200, '')
    expect(
      await client.createHook({
        model: 'deal',
        event: 'destroy',
        target_url: 'https://x.test/',
        object_type: 'api',
      }),
    ).toBeNull()
  })

  it("reads a person's nested listing in any plausible shape, and takes a 403 there as the person's, not the key's", async () => {
    const { client, metrics } = crmClient(database.db)
    const query = { perpage: '250', page: '1' }
    const listing = (body: unknown, status = 200) =>
      nock(CRM_URL)
        .get('/api/people/7/assis')
        .query(query)
        .reply(status, body as nock.Body)
    const read = () => client.nestedPage(people, 7, 'assis', { page: 1, perPage: 250 })
    listing([{ assi: { id: 1 } }, { id: 2 }])
    expect(await read()).toMatchObject({ status: 'found', items: [{ id: 1 }, { id: 2 }] })
    listing({ assis: [{ assi: { id: 3 } }] })
    expect(await read()).toMatchObject({ status: 'found', items: [{ id: 3 }] })
    listing('')
    expect(await read()).toMatchObject({ status: 'found', items: [] })
    listing({})
    expect(await read()).toMatchObject({ status: 'found', items: [] })
    listing({ error: 'not found' }, 404)
    expect(await read()).toMatchObject({ status: 'gone' })
    listing({ a: [1], b: [2] })
    await expect(read()).rejects.toThrow(/nested listing is not an array/)
    listing({ error: 'forbidden' }, 403)
    await expect(read()).rejects.toThrow()
    expect(metrics.authFailures.has('crm'), 'a 403 on a nested listing is no refused key').toBe(false)
  })
})
