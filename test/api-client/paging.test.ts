// Paging that does not trust the upstream: capped page sizes, empty last pages, an index that ignores
// `page` told from one that shifted under the walk, and the bounds that stop a walk which would not end.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { PagingError } from '../../src/api-client/errors.ts'
import { pageRepeats } from '../../src/api-client/paging.ts'
import type { RecordPage } from '../../src/api-client/reader.ts'
import { contacts, people } from '../../src/resources/index.ts'
import {
  CRM_URL,
  crmClient,
  person,
  RESERVATION_URL,
  reservationClient,
  useNock,
  useTestDatabase,
} from './harness.ts'

const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i)
const wrapped = (from: number, count: number) => ids(from, count).map((id) => ({ person: person(id) }))

async function collect(pages: AsyncIterable<RecordPage>) {
  const seen: RecordPage[] = []
  for await (const page of pages) seen.push(page)
  return seen
}

describe('paging', () => {
  const database = useTestDatabase()
  useNock()

  it('does not take a capped page for the last one: learns the size and stops at a shorter page', async () => {
    const { client } = crmClient(database.db, { pageSize: 500 })
    // Asked for 500, the upstream gives 250 at most.
    nock(CRM_URL)
      .get('/api/people')
      .query((q) => q.perpage === '500' && q.page === '1')
      .reply(200, wrapped(1, 250))
      .get('/api/people')
      .query((q) => q.page === '2')
      .reply(200, wrapped(251, 250))
      .get('/api/people')
      .query((q) => q.page === '3')
      .reply(200, wrapped(501, 17))

    const pages = await collect(client.pages(people, { order: { field: 'updated_at', direction: 'desc' } }))
    expect(pages.map((p) => p.size)).toEqual([250, 250, 17])
    expect(pages.flatMap((p) => p.records.map((r) => r.id))).toEqual(ids(1, 517))
  })

  it('stops at an empty page when the last page was full', async () => {
    const { client } = crmClient(database.db, { pageSize: 3 })
    nock(CRM_URL)
      .get('/api/people')
      .query((q) => q.page === '1')
      .reply(200, wrapped(1, 3))
      .get('/api/people')
      .query((q) => q.page === '2')
      .reply(200, wrapped(4, 3))
      .get('/api/people')
      .query((q) => q.page === '3')
      .reply(200, [])
    const pages = await collect(client.pages(people))
    expect(pages.map((p) => p.page)).toEqual([1, 2])
  })

  it('asks once more after a short first page, which may be the cap as well as the end', async () => {
    const { client } = reservationClient(database.db, { pageSize: 100 })
    nock(RESERVATION_URL)
      .get('/api/contacts')
      .query({ perpage: '100', page: '1', include_tags: 'true' })
      .reply(200, [{ id: 1, updated_at: '2024-01-01T00:00:00Z' }])
      .get('/api/contacts')
      .query({ perpage: '100', page: '2', include_tags: 'true' })
      .reply(200, [])
    const pages = await collect(client.pages(contacts))
    expect(pages.map((p) => p.records.length)).toEqual([1])
  })

  it('counts rejected items toward the page size, so a page with a bad record is not taken as short', async () => {
    const { client } = crmClient(database.db, { pageSize: 2 })
    nock(CRM_URL)
      .get('/api/people')
      .query((q) => q.page === '1')
      .reply(200, [{ person: person(1) }, { person: { id: 2, updated_at: 'garbage' } }])
      .get('/api/people')
      .query((q) => q.page === '2')
      .reply(200, [{ person: person(3) }])
    const pages = await collect(client.pages(people))
    expect(pages.map((p) => [p.records.length, p.rejected.length])).toEqual([
      [1, 1],
      [1, 0],
    ])
  })

  it('ends when the upstream ignores page and sends its first page a third time', async () => {
    const { client } = crmClient(database.db, { pageSize: 2 })
    const scope = nock(CRM_URL).get('/api/people').query(true).times(3).reply(200, wrapped(1, 2))
    const pages = await collect(client.pages(people))
    expect(pages.map((p) => p.records.map((r) => r.id))).toEqual([[1, 2]])
    expect(scope.isDone()).toBe(true)
  })

  it('reads on past a page repeated by a shift: a page of records created in front between two requests', async () => {
    const { client } = crmClient(database.db, { pageSize: 2 })
    // Newest first: 1 to 5 listed; after page 2, records 6 and 7 are created in front, so page 3 is
    // page 2 again, and the older records follow.
    const page = (n: number, records: number[]) =>
      nock(CRM_URL)
        .get('/api/people')
        .query((q) => q.page === String(n))
        .reply(
          200,
          records.map((id) => ({ person: person(id) })),
        )
    page(1, [1, 2])
    page(2, [3, 4])
    page(3, [3, 4])
    page(4, [5])
    const pages = await collect(client.pages(people, { order: { field: 'updated_at', direction: 'desc' } }))
    expect(pages.map((p) => [p.page, p.records.map((r) => r.id)])).toEqual([
      [1, [1, 2]],
      [2, [3, 4]],
      [4, [5]],
    ])
  })

  it('stops at the page limit when full pages never end', async () => {
    const { client } = crmClient(database.db, { pageSize: 2, maxPages: 4 })
    let page = 0
    nock(CRM_URL)
      .get('/api/people')
      .query(true)
      .times(4)
      .reply(() => {
        page += 1
        return [200, wrapped(page * 10, 2)]
      })
    const seen: number[] = []
    await expect(async () => {
      for await (const p of client.pages(people)) seen.push(p.page)
    }).rejects.toThrow(PagingError)
    expect(seen).toEqual([1, 2, 3, 4])
  })

  it('stops when the pages outrun what the count allows', async () => {
    const { client } = crmClient(database.db, { pageSize: 10, maxPages: 1000 })
    let page = 0
    // A count of 25 at 10 a page is 3 pages; 2 more are allowed for records created meanwhile.
    nock(CRM_URL)
      .get('/api/people')
      .query(true)
      .times(5)
      .reply(() => {
        page += 1
        return [200, wrapped(page * 100, 10)]
      })
    await expect(collect(client.pages(people, { total: 25 }))).rejects.toThrow(
      'more than 5 pages of 10 for a count of 25',
    )
  })
})

describe('pageRepeats', () => {
  const verdicts = (keys: string[]) => {
    const repeats = pageRepeats()
    return keys.map((key) => repeats(key))
  }

  it('ends at the same page a third time in a row: an index that ignores page, or clamps it to its last', () => {
    expect(verdicts(['1,2', '1,2', '1,2'])).toEqual(['new', 'again', 'end'])
    expect(verdicts(['1,2', '3,4', '3,4', '3,4'])).toEqual(['new', 'new', 'again', 'end'])
  })

  it('reads on past a page once again: a shift, the second page repeating the first included', () => {
    expect(verdicts(['1,2', '1,2', '3,4', '3,4', '5,6', '7'])).toEqual([
      'new',
      'again',
      'new',
      'again',
      'new',
      'new',
    ])
  })

  it('takes no empty key for a repeat', () => {
    expect(verdicts(['', '', ''])).toEqual(['new', 'new', 'new'])
  })
})
