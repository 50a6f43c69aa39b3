// The reservation client against a fake service: token header, bare records, both order spellings,
// contacts with their tags, tags and webforms, a contact's bookings, and a count whose answer is not
// documented.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { UpstreamAuthError } from '../../src/api-client/errors.ts'
import { countIn, spellOrder } from '../../src/api-client/reservation.ts'
import { bookings, contacts, people } from '../../src/resources/index.ts'
import { reservationTags, webforms } from '../../src/resources/reservation.ts'
import {
  RESERVATION_KEY,
  RESERVATION_URL,
  reservationClient,
  T0,
  useNock,
  useTestDatabase,
} from './harness.ts'

const contact = {
  id: 187,
  account_id: 8,
  last: 'Gast',
  newsletter: false,
  completed_bookings_count: 1,
  created_at: '2011-06-15T09:41:58.000+02:00',
  updated_at: '2011-06-15T09:41:58.000+02:00',
}
const booking = {
  id: 222,
  account_id: 8,
  area_id: 14,
  contact_id: 187,
  date: '2011-06-17',
  hour: 16,
  minute: 30,
  number_guests: 6,
  duration: 90,
  mail_confirmation: false,
  created_at: '2011-06-15T09:41:58.000+02:00',
  updated_at: '2011-06-15T09:41:58.000+02:00',
  status: 'accepted',
  webform: false,
  contact,
}

describe('reservation client', () => {
  const database = useTestDatabase()
  useNock()

  it('reads bookings as a plain array with the token header, keeping the embedded contact', async () => {
    const { client } = reservationClient(database.db)
    nock(RESERVATION_URL)
      .get('/api/bookings')
      .matchHeader('authorization', `Token token="${RESERVATION_KEY}"`)
      .query({ perpage: '100', page: '1', order: 'updated_at-desc' })
      .reply(200, [booking])
    const page = await client.index(bookings, { order: { field: 'updated_at', direction: 'desc' } })
    expect(page.records).toEqual([booking])
    expect(page.fetchedAt).toEqual(new Date(T0))
  })

  it('spells order with hyphens when configured so', async () => {
    const { client } = reservationClient(database.db, { orderSpelling: 'hyphen' })
    nock(RESERVATION_URL)
      .get('/api/contacts')
      .query({ perpage: '100', page: '1', order: 'updated-at-desc', include_tags: 'true' })
      .reply(200, [contact])
    expect(
      (await client.index(contacts, { order: { field: 'updated_at', direction: 'desc' } })).records,
    ).toEqual([contact])
    expect(spellOrder({ field: 'created_at', direction: 'asc' }, 'hyphen')).toBe('created-at-asc')
    expect(spellOrder({ field: 'created_at', direction: 'asc' }, 'underscore')).toBe('created_at-asc')
  })

  const older = { ...contact, id: 1, updated_at: '2020-01-01T00:00:00Z' }
  const newer = { ...contact, id: 2, updated_at: '2024-01-01T00:00:00Z' }
  const newestFirst = { field: 'updated_at', direction: 'desc' } as const

  /**
   * A contacts index answering `times` requests, newest first for the spellings in `parses` and by id
   * otherwise; returns the spelling of `order` each request used.
   */
  function contactsOrdered(parses: readonly string[], times: number): string[] {
    const asked: string[] = []
    nock(RESERVATION_URL)
      .get('/api/contacts')
      .query((query) => {
        asked.push(String(query.order))
        return true
      })
      .times(times)
      .reply(200, () => (parses.includes(asked.at(-1) ?? '') ? [newer, older] : [older, newer]))
    return asked
  }

  it('learns the spelling of order that the service parses: the other one, once a page is out of order', async () => {
    const { client, lines } = reservationClient(database.db)
    const asked = contactsOrdered(['updated-at-desc'], 3)
    expect((await client.index(contacts, { order: newestFirst })).records).toEqual([newer, older])
    expect((await client.index(contacts, { order: newestFirst, page: 2 })).records).toEqual([newer, older])
    expect(asked).toEqual(['updated_at-desc', 'updated-at-desc', 'updated-at-desc'])
    expect(lines.filter((line) => line.includes('did not order'))).toEqual([])
  })

  it('keeps its first spelling once pages come in order, and never asks twice for a page in order', async () => {
    const { client } = reservationClient(database.db)
    const asked = contactsOrdered(['updated_at-desc', 'updated-at-desc'], 2)
    await client.index(contacts, { order: newestFirst })
    await client.index(contacts, { order: newestFirst, page: 2 })
    expect(asked).toEqual(['updated_at-desc', 'updated_at-desc'])
  })

  it('warns once when neither spelling orders the page, and goes back to the first', async () => {
    const { client, lines } = reservationClient(database.db)
    const asked = contactsOrdered([], 3)
    await client.index(contacts, { order: newestFirst })
    await client.index(contacts, { order: newestFirst, page: 2 })
    expect(asked).toEqual(['updated_at-desc', 'updated-at-desc', 'updated_at-desc'])
    expect(lines.filter((line) => line.includes('did not order the page by updated_at'))).toHaveLength(1)
  })

  it('shows a contact with its tags, and answers gone for one that was deleted', async () => {
    const { client } = reservationClient(database.db)
    const tagged = { ...contact, tags: [{ id: 5, name: 'Stammgast' }] }
    nock(RESERVATION_URL)
      .get('/api/contacts/187')
      .query({ include_tags: 'true' })
      .reply(200, tagged)
      .get('/api/contacts/188')
      .query({ include_tags: 'true' })
      .reply(404)
    expect(await client.show(contacts, 187)).toEqual({
      status: 'found',
      record: tagged,
      fetchedAt: new Date(T0),
    })
    expect(await client.show(contacts, 188)).toEqual({ status: 'gone', fetchedAt: new Date(T0) })
  })

  it('reads tags and webforms without an order, and keeps records without timestamps', async () => {
    const { client } = reservationClient(database.db)
    const tag = { id: 5, name: 'Stammgast' }
    const webform = { id: 9, name: 'Terrasse', active: true }
    nock(RESERVATION_URL)
      .get('/api/tags')
      .query({ perpage: '100', page: '1' })
      .reply(200, [tag, { ...tag, id: 6, updated_at: '2024-01-01T00:00:00+01:00' }])
      .get('/api/webforms')
      .query({ perpage: '100', page: '1' })
      .reply(200, [webform])
    const tags = await client.index(reservationTags)
    expect(tags.records.map((record) => record.id)).toEqual([5, 6])
    expect(tags.rejected).toEqual([])
    expect((await client.index(webforms)).records).toEqual([webform])
  })

  it("lists a contact's bookings, and answers gone for a contact that does not exist", async () => {
    const { client } = reservationClient(database.db)
    nock(RESERVATION_URL)
      .get('/api/contacts/187/bookings')
      .reply(200, [booking, { ...booking, id: 223, updated_at: null }])
      .get('/api/contacts/9/bookings')
      .reply(404)
    const found = await client.contactBookings(187)
    if (found.status !== 'found') throw new Error('expected the bookings')
    expect(found.records).toEqual([booking])
    expect(found.rejected.map((e) => e.message)).toEqual([
      'reservations.bookings 223: updated_at is null, not a timestamp',
    ])
    expect(await client.contactBookings(9)).toEqual({ status: 'gone', fetchedAt: new Date(T0) })
  })

  it('reads the contact count in whatever form it comes, and null for a form it does not know', async () => {
    const { client } = reservationClient(database.db)
    const answers: [number, unknown][] = [
      [200, 42],
      [200, { count: 42 }],
      [200, { total_entries: '42' }],
      [200, '42'],
      [200, { contacts: [1, 2] }],
      [200, '<html>count</html>'],
      [404, { error: 'no route' }],
      [400, { error: 'param-missing' }],
    ]
    for (const [status, body] of answers)
      nock(RESERVATION_URL)
        .get('/api/contacts/count')
        .reply(status, body as nock.Body)
    const counts = []
    for (const _ of answers) counts.push(await client.countContacts())
    expect(counts).toEqual([42, 42, 42, 42, null, null, null, null])
  })

  it('still throws when the count is refused for a bad key: that is not an unknown form', async () => {
    const { client } = reservationClient(database.db)
    nock(RESERVATION_URL).get('/api/contacts/count').reply(401)
    await expect(client.countContacts()).rejects.toBeInstanceOf(UpstreamAuthError)
  })

  it('refuses a CRM resource', async () => {
    const { client } = reservationClient(database.db)
    await expect(client.index(people)).rejects.toThrow('not a resource of the reservation service')
  })

  it('recognises the count forms on their own', () => {
    expect([
      countIn(7),
      countIn({ total: 7 }),
      countIn(-1),
      countIn(1.5),
      countIn(null),
      countIn([7]),
    ]).toEqual([7, 7, null, null, null, null])
  })
})
