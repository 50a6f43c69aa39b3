// The simulator's table of reservation kinds: one entry per resource of the reservation service, with
// how its index pages and what its routes and the control API do with it. The routes (index, show,
// create, update, delete under /api/<key>), the store's use of it, the control API, the seed counts
// and the mirror comparison (mirror-truth.ts) are derived from it; its keys are the paths of the
// resource table's entries (test/sandbox/kinds.test.ts), and of `ReservationRows` (reservation-rows.ts),
// which types it. A new reservation resource is an entry here (with its row there and its collection in
// the store); reservation.ts adds only the routes beyond the standard ones.
import type { Outcome } from './kind.ts'
import type { Query } from './listing.ts'
import { type ReservationAccount, renderBooking, renderContact } from './reservation-account.ts'
import type {
  BookingRow,
  ContactRow,
  ReservationCollection,
  ReservationRows,
  ReservationTagRow,
  WebformRow,
} from './reservation-rows.ts'
import { renderTag, renderWebform, seedTags, seedWebforms, tagsOfContact } from './reservation-tags.ts'
import type { Stamped } from './rows.ts'
import type { Generation } from './seeding.ts'
import type { Collection, Store } from './store.ts'
import type { View } from './view.ts'

export interface ReservationKind<R extends Stamped = Stamped> {
  /** The record's name in messages, and the key a request body wraps it under (`contact`). */
  singular: string
  rows(store: Store): Collection<R>
  /**
   * `documented`: the index pages and orders as the document says; `undocumented`: it pages as the
   * sandbox's setting for indexes whose paging is not shown (undocumented-paging.ts), in id order
   * whatever `order` asks.
   */
  paging: 'documented' | 'undocumented'
  /** What `order=name-…`, the default order, sorts by. */
  sortName(store: Store, row: R): string
  /** Whether the index lists the row for the query (all when not given). */
  listed?(row: R, query: Query): boolean
  /** The record as index and show answer it. */
  serve(view: View, row: R, query: Query): Record<string, unknown>
  /** The record as the control API shows it: every field, every include. */
  render(view: View, row: R): Record<string, unknown>
  /** `userId`: who makes the change (null: the API key). */
  create(account: ReservationAccount, fields: unknown, userId: number | null): Outcome<R>
  update(account: ReservationAccount, id: number, fields: unknown): Outcome<R> | null
  destroy(account: ReservationAccount, id: number): boolean
  /** Generates `count` records; contacts and bookings are generated together in seed-reservations.ts. */
  seed?(generation: Generation): void
}

const contactName = (row: ContactRow) => `${row.last} ${row.first ?? ''}`

const contacts: ReservationKind<ContactRow> = {
  singular: 'contact',
  rows: (store) => store.contacts,
  paging: 'documented',
  sortName: (_store, row) => contactName(row),
  listed(row, query) {
    const withNewsletter = query('only_with_newsletter') === 'true'
    if (query('only_with_mail') !== 'true' && !withNewsletter) return true
    return Boolean(row.mail) && (!withNewsletter || row.newsletter === 'subscribed')
  },
  serve(view, row, query) {
    const record = renderContact(view, row)
    return query('include_tags') === 'true' ? { ...record, tags: tagsOfContact(view.store, row.id) } : record
  },
  render: (view, row) => ({ ...renderContact(view, row, true), tags: tagsOfContact(view.store, row.id) }),
  create: (account, fields) => account.createContact(fields),
  update: (account, id, fields) => account.updateContact(id, fields),
  destroy: (account, id) => account.destroyContact(id),
}

const bookings: ReservationKind<BookingRow> = {
  singular: 'booking',
  rows: (store) => store.bookings,
  paging: 'documented',
  sortName(store, row) {
    const contact = store.contacts.rows.get(row.contact_id)
    return contact ? contactName(contact) : ''
  },
  serve: (view, row) => renderBooking(view, row),
  render: renderBooking,
  create: (account, fields, userId) => account.createBooking(fields, userId),
  update: (account, id, fields) => account.updateBooking(id, fields),
  destroy: (account, id) => account.destroyBooking(id),
}

const tags: ReservationKind<ReservationTagRow> = {
  singular: 'tag',
  rows: (store) => store.tags,
  paging: 'undocumented',
  sortName: (_store, row) => row.name,
  serve: (view, row) => renderTag(view, row),
  render: renderTag,
  create: (account, fields) => account.createTag(fields),
  update: (account, id, fields) => account.updateTag(id, fields),
  destroy: (account, id) => account.destroyTag(id),
  seed: seedTags,
}

const webforms: ReservationKind<WebformRow> = {
  singular: 'webform',
  rows: (store) => store.webforms,
  paging: 'undocumented',
  sortName: (_store, row) => row.name,
  serve: (view, row) => renderWebform(view, row),
  render: renderWebform,
  create: (account, fields) => account.createWebform(fields),
  update: (account, id, fields) => account.updateWebform(id, fields),
  destroy: (account, id) => account.destroyWebform(id),
  seed: seedWebforms,
}

export const reservationKinds: {
  readonly [C in ReservationCollection]: ReservationKind<ReservationRows[C]>
} = {
  contacts,
  bookings,
  tags,
  webforms,
}

export const RESERVATION_COLLECTIONS = Object.keys(reservationKinds) as ReservationCollection[]

export function isReservationCollection(name: string | undefined): name is ReservationCollection {
  return name !== undefined && Object.hasOwn(reservationKinds, name)
}
