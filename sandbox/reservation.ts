// The reservation service over HTTP: bare records (no wrapper in responses), `Token` auth. The
// standard routes of every kind (reservation-kinds.ts) are registered in one loop; the contacts add
// search, count and their bookings.
import { type Context, Hono } from 'hono'
import { getPath } from 'hono/utils/url'
import { apiGate, type GateOptions } from './gate.ts'
import { capitalised, emptyOk, ID, notFound, readWrapped, unprocessable } from './http.ts'
import { contains } from './kind.ts'
import { type Order, pageOf, parseOrder, parsePaging, type Query, sortedRows } from './listing.ts'
import type { ReservationAccount } from './reservation-account.ts'
import { type ReservationKind, reservationKinds } from './reservation-kinds.ts'
import type { Stamped } from './rows.ts'
import type { Store } from './store.ts'
import { type UndocumentedPaging, undocumentedPageOf } from './undocumented-paging.ts'

export interface ReservationAppOptions {
  account: ReservationAccount
  store: Store
  maxPerpage(): number
  /** How the indexes whose paging the document does not show page (tags, webforms). */
  undocumentedPaging(): UndocumentedPaging
  /** The random source that orders ties anew on every request, or undefined: ties by id. */
  ties(): (() => number) | undefined
  gate: Omit<GateOptions, 'presentedKey'>
}

const DEFAULT_PERPAGE = 50
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

  const queryOf =
    (c: Context): Query =>
    (name) =>
      c.req.query(name)
  const paging = (c: Context) => parsePaging(queryOf(c), DEFAULT_PERPAGE, options.maxPerpage())
  // Either spelling: `updated_at-desc` and `updated-at-desc`.
  const orderOf = (c: Context): Order => parseOrder(c.req.query('order'), { hyphenated: true })
  /** The index rows of a kind as the query selects them, in its order, before paging. */
  const listed = (c: Context, kind: ReservationKind): Stamped[] => {
    const collection = kind.rows(store)
    const rows =
      kind.paging === 'undocumented'
        ? [...collection.rows.values()].sort((a, b) => a.id - b.id)
        : sortedRows(collection, orderOf(c), (row) => kind.sortName(store, row), options.ties())
    const query = queryOf(c)
    return kind.listed ? rows.filter((row) => kind.listed?.(row, query)) : rows
  }
  const page = (c: Context, kind: ReservationKind, rows: readonly Stamped[]) =>
    kind.paging === 'undocumented'
      ? undocumentedPageOf(rows, paging(c), options.undocumentedPaging())
      : pageOf(rows, paging(c))
  const idOf = (c: Context) => Number(c.req.param('id'))
  const missing = (kind: ReservationKind, c: Context) =>
    notFound(c, `${capitalised(kind.singular)} with 'id'=${c.req.param('id')}`)
  const contactsKind = reservationKinds.contacts as ReservationKind

  // The contacts' routes beyond the standard ones (`search` and `count` are not ids: no clash).
  // Routed, with a response the spec does not show: a bare number.
  app.get('/api/contacts/count', (c) => c.json(store.contacts.rows.size))
  app.get('/api/contacts/search', (c) => {
    const fields = ['first', 'last', 'phone', 'mail', 'company'] as const
    const wanted = fields.flatMap((field) => {
      const value = c.req.query(field)
      return value ? [[field, value] as const] : []
    })
    if (!wanted.length) return c.json([])
    const rows = sortedRows(
      store.contacts,
      orderOf(c),
      (row) => contactsKind.sortName(store, row),
      options.ties(),
    ).filter((row) => wanted.every(([field, value]) => contains(row[field], value)))
    return c.json(pageOf(rows, paging(c)).map((row) => contactsKind.serve(view, row, queryOf(c))))
  })
  app.get(`/api/contacts/${ID}/bookings`, (c) => {
    const contactId = idOf(c)
    if (!store.contacts.rows.has(contactId)) return missing(contactsKind, c)
    const own = store.bookingsOfContact.get(contactId) ?? new Set()
    const kind = reservationKinds.bookings as ReservationKind
    const rows = listed(c, kind).filter((row) => own.has(row.id))
    return c.json(pageOf(rows, paging(c)).map((row) => kind.serve(view, row, queryOf(c))))
  })

  for (const [path, entry] of Object.entries(reservationKinds)) {
    const kind = entry as ReservationKind
    const rows = kind.rows(store)
    app.get(`/api/${path}`, (c) =>
      c.json(page(c, kind, listed(c, kind)).map((row) => kind.serve(view, row, queryOf(c)))),
    )
    app.get(`/api/${path}/${ID}`, (c) => {
      const row = rows.rows.get(idOf(c))
      return row ? c.json(kind.serve(view, row, queryOf(c))) : missing(kind, c)
    })
    app.post(`/api/${path}`, async (c) => {
      const read = await readWrapped(c, kind.singular)
      if (!read.ok) return read.response
      const outcome = kind.create(account, read.body, null)
      return outcome.ok
        ? c.json(
            kind.serve(view, outcome.row, () => undefined),
            201,
          )
        : unprocessable(c, outcome.errors)
    })
    app.on(['PUT', 'PATCH'], `/api/${path}/${ID}`, async (c) => {
      const read = await readWrapped(c, kind.singular)
      if (!read.ok) return read.response
      const outcome = kind.update(account, idOf(c), read.body)
      if (!outcome) return missing(kind, c)
      return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
    })
    app.delete(`/api/${path}/${ID}`, (c) => (kind.destroy(account, idOf(c)) ? emptyOk() : missing(kind, c)))
  }
  return app
}
