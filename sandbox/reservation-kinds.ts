// The simulator's table of reservation kinds: one entry per resource of the reservation service,
// with what the control API does with it. The control API, the seed counts and the mirror
// comparison (mirror-truth.ts) are derived from it; its keys are the paths of the resource table's
// entries (test/sandbox/kinds.test.ts).
import type { Outcome } from './kind.ts'
import { type ReservationAccount, renderBooking, renderContact } from './reservation-account.ts'
import type { BookingRow, Collection, ContactRow, Stamped, Store } from './store.ts'
import type { View } from './view.ts'

export interface ReservationKind<R extends Stamped = Stamped> {
  /** The record's name in messages (`contact`). */
  singular: string
  rows(store: Store): Collection<R>
  /** The record as the control API shows it. */
  render(view: View, row: R): Record<string, unknown>
  create(account: ReservationAccount, fields: unknown, userId: number): Outcome<R>
  update(account: ReservationAccount, id: number, fields: unknown): Outcome<R> | null
  destroy(account: ReservationAccount, id: number): boolean
}

const contacts: ReservationKind<ContactRow> = {
  singular: 'contact',
  rows: (store) => store.contacts,
  render: (view, row) => renderContact(view, row, true),
  create: (account, fields) => account.createContact(fields),
  update: (account, id, fields) => account.updateContact(id, fields),
  destroy: (account, id) => account.destroyContact(id),
}

const bookings: ReservationKind<BookingRow> = {
  singular: 'booking',
  rows: (store) => store.bookings,
  render: renderBooking,
  create: (account, fields, userId) => account.createBooking(fields, userId),
  update: (account, id, fields) => account.updateBooking(id, fields),
  destroy: (account, id) => account.destroyBooking(id),
}

export const reservationKinds = { contacts, bookings } as const

export type ReservationCollection = keyof typeof reservationKinds
export const RESERVATION_COLLECTIONS = Object.keys(reservationKinds) as ReservationCollection[]

export function isReservationCollection(name: string | undefined): name is ReservationCollection {
  return name !== undefined && Object.hasOwn(reservationKinds, name)
}
