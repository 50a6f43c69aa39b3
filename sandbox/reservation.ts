// The reservation service over HTTP: bare records (no wrapper in responses), `Token` auth.
import { type Context, Hono } from 'hono'
import { getPath } from 'hono/utils/url'
import { apiGate, type GateOptions } from './gate.ts'
import { emptyOk, notFound, readWrapped, unprocessable } from './http.ts'
import { contains } from './kind.ts'
import { type Order, pageOf, parseOrder, parsePaging, sortedRows } from './listing.ts'
import { type ReservationAccount, renderBooking, renderContact } from './reservation-account.ts'
import type { BookingRow, ContactRow, Store } from './store.ts'

export interface ReservationAppOptions {
  account: ReservationAccount
  store: Store
  maxPerpage(): number
  gate: Omit<GateOptions, 'presentedKey'>
}

const DEFAULT_PERPAGE = 50
const ID = ':id{[0-9]+}'
const withoutJsonSuffix = (request: Request) => getPath(request).replace(/\.json$/, '')

/** `Authorization: Token token="<key>"` (Rails accepts the value unquoted too). */
function presentedKey(c: Context): string | undefined {
  const match = /^Token\s+token="?([^",]+)"?/.exec(c.req.header('authorization') ?? '')
  return match?.[1]
}

export function createReservationApp(options: ReservationAppOptions): Hono {
  const { account, store } = options
  const { view } = account
  const app = new Hono({ getPath: withoutJsonSuffix })
  app.use('/api/*', apiGate({ ...options.gate, presentedKey }))

  const paged = <R>(c: Context, rows: readonly R[]) =>
    pageOf(
      rows,
      parsePaging((name) => c.req.query(name), DEFAULT_PERPAGE, options.maxPerpage()),
    )
  // Either spelling: `updated_at-desc` and `updated-at-desc`.
  const orderOf = (c: Context): Order => parseOrder(c.req.query('order'), { hyphenated: true })
  const contactName = (row: ContactRow) => `${row.last} ${row.first ?? ''}`
  const bookingName = (row: BookingRow) => {
    const contact = store.contacts.rows.get(row.contact_id)
    return contact ? contactName(contact) : ''
  }
  const showContact = (c: Context, row: ContactRow) => {
    const record = renderContact(view, row)
    return c.req.query('include_tags') === 'true' ? { ...record, tags: [] } : record
  }
  const missing = (what: string) => (c: Context) => notFound(c, `${what} with 'id'=${c.req.param('id')}`)
  const missingContact = missing('Contact')
  const missingBooking = missing('Booking')
  const idOf = (c: Context) => Number(c.req.param('id'))

  app.get('/api/contacts', (c) => {
    const withMail = c.req.query('only_with_mail') === 'true'
    const withNewsletter = c.req.query('only_with_newsletter') === 'true'
    let rows = sortedRows(store.contacts, orderOf(c), contactName)
    if (withMail || withNewsletter) {
      rows = rows.filter((row) => row.mail && (!withNewsletter || row.newsletter === 'subscribed'))
    }
    return c.json(paged(c, rows).map((row) => showContact(c, row)))
  })
  // Routed, with a response the spec does not show: a bare number.
  app.get('/api/contacts/count', (c) => c.json(store.contacts.rows.size))
  app.get('/api/contacts/search', (c) => {
    const fields = ['first', 'last', 'phone', 'mail', 'company'] as const
    const wanted = fields.flatMap((field) => {
      const value = c.req.query(field)
      return value ? [[field, value] as const] : []
    })
    if (!wanted.length) return c.json([])
    const rows = sortedRows(store.contacts, orderOf(c), contactName).filter((row) =>
      wanted.every(([field, value]) => contains(row[field], value)),
    )
    return c.json(paged(c, rows).map((row) => showContact(c, row)))
  })
  app.get(`/api/contacts/${ID}`, (c) => {
    const row = store.contacts.rows.get(idOf(c))
    return row ? c.json(showContact(c, row)) : missingContact(c)
  })
  app.get(`/api/contacts/${ID}/bookings`, (c) => {
    const contactId = idOf(c)
    if (!store.contacts.rows.has(contactId)) return missingContact(c)
    const own = store.bookingsOfContact.get(contactId) ?? new Set()
    const rows = sortedRows(store.bookings, orderOf(c), bookingName).filter((row) => own.has(row.id))
    return c.json(paged(c, rows).map((row) => renderBooking(view, row)))
  })
  app.post('/api/contacts', async (c) => {
    const read = await readWrapped(c, 'contact')
    if (!read.ok) return read.response
    const outcome = account.createContact(read.body)
    return outcome.ok ? c.json(renderContact(view, outcome.row), 201) : unprocessable(c, outcome.errors)
  })
  app.on(['PUT', 'PATCH'], `/api/contacts/${ID}`, async (c) => {
    const read = await readWrapped(c, 'contact')
    if (!read.ok) return read.response
    const outcome = account.updateContact(idOf(c), read.body)
    if (!outcome) return missingContact(c)
    return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
  })
  app.delete(`/api/contacts/${ID}`, (c) => (account.destroyContact(idOf(c)) ? emptyOk() : missingContact(c)))

  app.get('/api/bookings', (c) => {
    const rows = sortedRows(store.bookings, orderOf(c), bookingName)
    return c.json(paged(c, rows).map((row) => renderBooking(view, row)))
  })
  app.get(`/api/bookings/${ID}`, (c) => {
    const row = store.bookings.rows.get(idOf(c))
    return row ? c.json(renderBooking(view, row)) : missingBooking(c)
  })
  app.post('/api/bookings', async (c) => {
    const read = await readWrapped(c, 'booking')
    if (!read.ok) return read.response
    const outcome = account.createBooking(read.body, null)
    return outcome.ok ? c.json(renderBooking(view, outcome.row), 201) : unprocessable(c, outcome.errors)
  })
  app.on(['PUT', 'PATCH'], `/api/bookings/${ID}`, async (c) => {
    const read = await readWrapped(c, 'booking')
    if (!read.ok) return read.response
    const outcome = account.updateBooking(idOf(c), read.body)
    if (!outcome) return missingBooking(c)
    return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
  })
  app.delete(`/api/bookings/${ID}`, (c) => (account.destroyBooking(idOf(c)) ? emptyOk() : missingBooking(c)))
  return app
}
