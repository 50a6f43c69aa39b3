// The reservation simulator: bare records, Token auth, paging and ordering, embedded contacts, tags
// and webforms with the paging of an index the document does not describe, the tags of contacts.
import { describe, expect, it } from 'vitest'
import { harness } from './helpers.ts'

const booking = (contactId: number, fields: Record<string, unknown> = {}) => ({
  booking: {
    type: 'SingleBooking',
    area_id: 14,
    contact_id: contactId,
    date: '2024-06-17',
    hour: 16,
    minute: 30,
    number_guests: 6,
    ...fields,
  },
})

describe('reservation service', () => {
  it('takes the key as Authorization: Token token="..." and answers 401 otherwise', async () => {
    const { sandbox, reservation } = await harness()
    expect((await reservation.raw('/api/contacts')).status).toBe(401)
    const wrong = { authorization: 'Token token="wrong"' }
    expect((await reservation.raw('/api/contacts', { headers: wrong })).status).toBe(401)
    const unquoted = { authorization: `Token token=${sandbox.reservationApiKey}` }
    expect((await reservation.raw('/api/contacts.json', { headers: unquoted })).status).toBe(200)
    const crmKey = { 'x-apikey': sandbox.crmApiKey }
    expect((await reservation.raw('/api/contacts', { headers: crmKey })).status).toBe(401)
  })

  it('creates contacts with unset fields null, newsletter false and no bookings; lists them as a plain array', async () => {
    const { reservation } = await harness()
    const created = await reservation.send('POST', 'contacts', {
      contact: { last: 'Mustermann', first: 'Maxi' },
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      last: 'Mustermann',
      first: 'Maxi',
      mail: null,
      phone: null,
      newsletter: false,
      completed_bookings_count: 0,
      deleted_at: null,
    })
    expect(created.body).not.toHaveProperty('phone_clean')
    const listed = await reservation.get('contacts')
    expect(listed.body).toEqual([created.body])
    expect((await reservation.get(`contacts/${created.body.id}`)).body).toEqual(created.body)
    expect((await reservation.send('POST', 'contacts', { contact: { first: 'Ohne' } })).body).toEqual({
      last: ["can't be blank"],
    })
  })

  it('embeds the contact with its further keys in every booking, and lists the bookings of a contact', async () => {
    const { reservation } = await harness()
    const contact = (
      await reservation.send('POST', 'contacts', { contact: { last: 'Gast', phone: '0341 12345' } })
    ).body
    const other = (await reservation.send('POST', 'contacts', { contact: { last: 'Anders' } })).body
    const created = await reservation.send('POST', 'bookings', booking(contact.id))
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      duration: 90,
      status: 'open',
      group_id: null,
      created_by_user_id: null,
    })
    expect(created.body.contact).toMatchObject({
      id: contact.id,
      phone_clean: '+4934112345',
      phone2_clean: null,
      newsletter_double_opt_in_hash: null,
      import_id: null,
      deleted_at: null,
      newsletter: false,
    })
    await reservation.send('POST', 'bookings', booking(other.id))
    const own = await reservation.get(`contacts/${contact.id}/bookings`)
    expect(own.body.map((b: { id: number }) => b.id)).toEqual([created.body.id])
    expect((await reservation.get('contacts/1/bookings')).status).toBe(404)
    expect((await reservation.get(`bookings/${created.body.id}`)).body).toEqual(created.body)
  })

  it('refuses invalid bookings with 422', async () => {
    const { reservation } = await harness()
    const contact = (await reservation.send('POST', 'contacts', { contact: { last: 'Gast' } })).body
    expect(
      (await reservation.send('POST', 'bookings', booking(contact.id, { minute: 60 }))).body,
    ).toHaveProperty('minute')
    expect((await reservation.send('POST', 'bookings', booking(12345))).body).toEqual({
      contact_id: ['does not exist'],
    })
    const missing = await reservation.send('POST', 'bookings', { booking: { type: 'SingleBooking' } })
    expect(missing.status).toBe(422)
    expect(missing.body.area_id).toEqual(["can't be blank"])
  })

  it('updates and deletes with 200 and no body; 404 for unknown ids', async () => {
    const { reservation } = await harness()
    const contact = (await reservation.send('POST', 'contacts', { contact: { last: 'Gast' } })).body
    const created = (await reservation.send('POST', 'bookings', booking(contact.id))).body
    expect(
      await reservation.send('PUT', `bookings/${created.id}`, { booking: { status: 'completed' } }),
    ).toMatchObject({
      status: 200,
      text: '',
    })
    expect((await reservation.get(`contacts/${contact.id}`)).body.completed_bookings_count).toBe(1)
    expect(
      await reservation.send('PUT', `contacts/${contact.id}`, { contact: { newsletter: 'subscribed' } }),
    ).toMatchObject({
      status: 200,
    })
    expect((await reservation.get(`contacts/${contact.id}`)).body.newsletter).toBe('subscribed')
    expect((await reservation.send('DELETE', `bookings/${created.id}`, {})).status).toBe(200)
    expect((await reservation.get(`bookings/${created.id}`)).status).toBe(404)
    expect((await reservation.send('DELETE', `bookings/${created.id}`, {})).status).toBe(404)
    expect((await reservation.send('PUT', 'contacts/1', { contact: { last: 'X' } })).status).toBe(404)
  })

  it('removes a deleted contact with its bookings, or keeps it with deleted_at when deletion is soft', async () => {
    const { sandbox, reservation, clock } = await harness()
    const gone = sandbox.control.reservation.create('contacts', { last: 'Weg' })
    const kept = sandbox.control.reservation.create('contacts', { last: 'Bleibt' })
    const visit = sandbox.control.reservation.create('bookings', booking(gone.id).booking)
    expect((await reservation.send('DELETE', `contacts/${gone.id}`, {})).status).toBe(200)
    expect((await reservation.get(`contacts/${gone.id}`)).status).toBe(404)
    expect(sandbox.control.reservation.deletedIds('bookings')).toEqual([visit.id])

    sandbox.control.setBehaviour({ contactDeletion: 'soft' })
    clock.advance(2_000)
    expect((await reservation.send('DELETE', `contacts/${kept.id}`, {})).status).toBe(200)
    const shown = await reservation.get(`contacts/${kept.id}`)
    expect(shown.body.deleted_at).toBe('2024-06-03T09:00:02.000+01:00')
    expect((await reservation.get('contacts')).body.map((c: { id: number }) => c.id)).toEqual([kept.id])
    expect(sandbox.control.reservation.liveIds('contacts')).toEqual([])
    expect(sandbox.control.reservation.deletedIds('contacts')).toEqual([gone.id, kept.id])
  })

  it('pages (default 50) and orders in both spellings, updated_at-desc and updated-at-desc', async () => {
    const { reservation } = await harness({
      seedSize: { contacts: 120, bookings: 60 },
      behaviour: { tieOrder: 'by-id' },
    })
    expect((await reservation.get('contacts')).body).toHaveLength(50)
    expect((await reservation.get('contacts', { page: 3 })).body).toHaveLength(20)
    expect((await reservation.get('bookings', { perpage: 100 })).body).toHaveLength(60)
    const underscored = await reservation.get('contacts', { perpage: 120, order: 'updated_at-desc' })
    const hyphenated = await reservation.get('contacts', { perpage: 120, order: 'updated-at-desc' })
    expect(hyphenated.body).toEqual(underscored.body)
    const stamps = underscored.body.map((c: { updated_at: string }) => c.updated_at)
    expect(stamps).toEqual([...stamps].sort().reverse())
    const ascending = await reservation.get('contacts', { perpage: 120, order: 'created-at-asc' })
    const created = ascending.body.map((c: { created_at: string }) => c.created_at)
    expect(created).toEqual([...created].sort())
    expect(underscored.body.some((c: { newsletter: unknown }) => c.newsletter === false)).toBe(true)
  })

  it('filters contacts by mail and newsletter, adds tags on request, and searches', async () => {
    const { sandbox, reservation } = await harness()
    sandbox.control.reservation.create('contacts', { last: 'Ohne' })
    sandbox.control.reservation.create('contacts', { last: 'Post', mail: 'post@example.de' })
    sandbox.control.reservation.create('contacts', {
      last: 'Leser',
      mail: 'l@example.de',
      newsletter: 'subscribed',
    })
    const lasts = (body: { last: string }[]) => body.map((c) => c.last).sort()
    expect(lasts((await reservation.get('contacts', { only_with_mail: 'true' })).body)).toEqual([
      'Leser',
      'Post',
    ])
    expect(lasts((await reservation.get('contacts', { only_with_newsletter: 'true' })).body)).toEqual([
      'Leser',
    ])
    expect((await reservation.get('contacts', { include_tags: 'true' })).body[0].tags).toEqual([])
    expect(lasts((await reservation.get('contacts/search', { mail: 'example.de' })).body)).toEqual([
      'Leser',
      'Post',
    ])
    expect((await reservation.get('contacts/search', { last: 'niemand' })).body).toEqual([])
  })

  it('lists tags and webforms ignoring perpage and repeating the last page past the end, by default', async () => {
    const { sandbox, reservation } = await harness({ undocumentedPaging: { pageSize: 3 } })
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) sandbox.control.reservation.create('tags', { name })
    const names = async (query: Record<string, number>) =>
      ((await reservation.get('tags', query)).body as { name: string }[]).map((tag) => tag.name)
    expect(await names({ perpage: 100 })).toEqual(['a', 'b', 'c'])
    expect(await names({ perpage: 100, page: 2 })).toEqual(['d', 'e', 'f'])
    expect(await names({ perpage: 100, page: 3 })).toEqual(['d', 'e', 'f'])
    sandbox.control.setUndocumentedPaging({ page: 'ignored' })
    expect(await names({ perpage: 2, page: 2 })).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    sandbox.control.setUndocumentedPaging({ perpage: 'honoured', page: 'honoured' })
    expect(await names({ perpage: 4, page: 2 })).toEqual(['e', 'f'])
    expect(await names({ perpage: 4, page: 3 })).toEqual([])

    const form = await reservation.send('POST', 'webforms', { webform: { name: 'Terrasse' } })
    expect(form.status).toBe(201)
    expect(form.body).toMatchObject({ name: 'Terrasse', active: true, area_id: null })
    expect((await reservation.get('webforms')).body).toEqual([form.body])
    expect(
      (await reservation.send('PUT', `webforms/${form.body.id}`, { webform: { active: false } })).status,
    ).toBe(200)
    expect((await reservation.send('DELETE', `webforms/${form.body.id}`, undefined)).status).toBe(200)
    expect((await reservation.get(`webforms/${form.body.id}`)).status).toBe(404)
  })

  it("shows a contact's tags with include_tags=true; renames and deletes reach them, untouched", async () => {
    const { sandbox, reservation } = await harness()
    const contact = sandbox.control.reservation.create('contacts', { last: 'Gast' })
    const vip = sandbox.control.reservation.create('tags', { name: 'VIP' })
    const regular = sandbox.control.reservation.create('tags', { name: 'Stammgast' })
    // Over the control API's HTTP routes, as the demo would.
    const control = `${sandbox.reservationUrl}/__sandbox/reservation/contacts/${contact.id}/tags`
    const post = (tagId: number) =>
      fetch(control, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tag_id: tagId }),
      })
    expect((await post(vip.id)).status).toBe(201)
    expect((await post(regular.id)).status).toBe(201)
    expect((await post(999)).status).toBe(422)
    const shown = async () => (await reservation.get(`contacts/${contact.id}`, { include_tags: 'true' })).body
    expect((await shown()).tags).toEqual([
      { id: vip.id, name: 'VIP' },
      { id: regular.id, name: 'Stammgast' },
    ])
    expect(await reservation.get(`contacts/${contact.id}`).then((answer) => answer.body)).not.toHaveProperty(
      'tags',
    )
    sandbox.control.reservation.update('tags', vip.id, { name: 'Sehr wichtig' })
    sandbox.control.reservation.destroy('tags', regular.id)
    expect((await shown()).tags).toEqual([{ id: vip.id, name: 'Sehr wichtig' }])
    expect((await fetch(`${control}/${vip.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await fetch(`${control}/${vip.id}`, { method: 'DELETE' })).status).toBe(404)
    expect((await shown()).tags).toEqual([])
    // None of it touched the contact (childChangesTouchParent is false by default).
    expect((await shown()).updated_at).toBe(contact.updated_at)
  })
})
