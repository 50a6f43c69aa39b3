// Contacts and bookings of the reservation account: input schemas, payloads (bare, not wrapped)
// and changes (its tags and webforms: reservation-tags.ts). The service sends no webhooks: clients
// poll, and see deletions only as absences.
import { z } from 'zod'
import { cleanPhone } from './child-views.ts'
import { type Clock, nowSeconds } from './clock.ts'
import type { Behaviour, Counters } from './faults.ts'
import { bump } from './faults.ts'
import type { FieldErrors } from './http.ts'
import type { Ids } from './ids.ts'
import {
  assignGiven,
  dateInput,
  flag,
  id,
  invalid,
  longText,
  type Outcome,
  optionalId,
  required,
  text,
} from './kind.ts'
import { linkReferences, relinking, unlinkReferences } from './relations.ts'
import type { BookingRow, ContactRow } from './reservation-rows.ts'
import { tagOperations, untagAll } from './reservation-tags.ts'
import { changed, insert, remove, type Store } from './store.ts'
import type { View } from './view.ts'

export const NEWSLETTER_STATES = [
  'not_subscribed',
  'subscribed',
  'waiting_for_opt_in',
  'bounced',
  'unsubscribed',
] as const
export const BOOKING_STATES = [
  'open',
  'accepted',
  'auto_accepted',
  'currently_active',
  'declined',
  'completed',
  'no_show',
] as const
export const BOOKING_TYPES = ['SingleBooking', 'RecurringBooking'] as const

const contactFields = {
  title: text(50),
  first: text(100),
  note: longText,
  phone: text(80),
  phone2: text(80),
  mail: text(80),
  company: text(100),
  street: text(100),
  zip: text(10),
  city: text(80),
  // Returned as `false` when unset, so `false` is taken back as unset.
  newsletter: z
    .union([z.enum(NEWSLETTER_STATES), z.literal(false).transform(() => null)])
    .nullable()
    .optional(),
}
const contactCreate = z.object({ ...contactFields, last: required(100) })
const contactUpdate = z.object({ ...contactFields, last: required(100).optional() })

const integer = (min: number, max: number) =>
  z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]).pipe(z.number().min(min).max(max))
const bookingCreate = z.object({
  type: z.enum(BOOKING_TYPES),
  group_id: optionalId,
  area_id: id,
  contact_id: id,
  date: dateInput,
  hour: integer(0, 23),
  minute: integer(0, 59),
  number_guests: integer(1, 10_000),
  note: longText,
  duration: integer(1, 100_000).optional(),
  company: text(100),
  mail_confirmation: flag.optional(),
  status: z.enum(BOOKING_STATES).optional(),
  webform: flag.optional(),
})
const bookingUpdate = bookingCreate.partial()

export function completedBookings(store: Store, contactId: number): number {
  let count = 0
  for (const bookingId of store.bookingsOfContact.get(contactId) ?? []) {
    if (store.bookings.rows.get(bookingId)?.status === 'completed') count++
  }
  return count
}

/** Index and show carry `completed_bookings_count` and `deleted_at`; the embedded contact of a booking carries more. */
export function renderContact(view: View, row: ContactRow, embedded = false): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: row.id,
    account_id: view.accountId,
    title: row.title,
    first: row.first,
    last: row.last,
    note: row.note,
    phone: row.phone,
    phone2: row.phone2,
    mail: row.mail,
    company: row.company,
    street: row.street,
    zip: row.zip,
    city: row.city,
    newsletter: row.newsletter ?? false,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
    completed_bookings_count: completedBookings(view.store, row.id),
    deleted_at: row.deleted_at === null ? null : view.time(row.deleted_at),
  }
  if (embedded) {
    Object.assign(record, {
      phone_clean: cleanPhone(row.phone),
      phone2_clean: cleanPhone(row.phone2),
      newsletter_double_opt_in_hash: row.newsletter_double_opt_in_hash,
      import_id: row.import_id,
    })
  }
  return record
}

export function renderBooking(view: View, row: BookingRow): Record<string, unknown> {
  const contact = view.store.contacts.rows.get(row.contact_id)
  return {
    id: row.id,
    account_id: view.accountId,
    type: row.type,
    group_id: row.group_id,
    area_id: row.area_id,
    contact_id: row.contact_id,
    date: row.date,
    hour: row.hour,
    minute: row.minute,
    number_guests: row.number_guests,
    note: row.note,
    duration: row.duration,
    created_by_user_id: row.created_by_user_id,
    company: row.company,
    mail_confirmation: row.mail_confirmation,
    status: row.status,
    webform: row.webform,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
    contact: contact ? renderContact(view, contact, true) : null,
  }
}

export interface ReservationAccountDeps {
  store: Store
  ids: Ids
  clock: Clock
  view: View
  behaviour(): Behaviour
  counters(): Counters
}

export type ReservationAccount = ReturnType<typeof createReservationAccount>

/** Who makes a change: null for the API key, a user id for someone at the front desk. */
type UserId = number | null

export function createReservationAccount(deps: ReservationAccountDeps) {
  const { store } = deps
  const count = (event: string) => bump(deps.counters().changes, event)

  function contactErrors(contactId: number | undefined): FieldErrors | null {
    if (contactId === undefined) return null
    const contact = store.contacts.rows.get(contactId)
    return contact && contact.deleted_at === null ? null : { contact_id: ['does not exist'] }
  }

  return {
    view: deps.view,
    ...tagOperations(deps),

    createContact(input: unknown): Outcome<ContactRow> {
      const parsed = contactCreate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      const now = nowSeconds(deps.clock)
      const data = parsed.data
      const row: ContactRow = {
        id: deps.ids.next('contact'),
        title: data.title ?? null,
        first: data.first ?? null,
        last: data.last,
        note: data.note ?? null,
        phone: data.phone ?? null,
        phone2: data.phone2 ?? null,
        mail: data.mail ?? null,
        company: data.company ?? null,
        street: data.street ?? null,
        zip: data.zip ?? null,
        city: data.city ?? null,
        newsletter: data.newsletter ?? null,
        newsletter_double_opt_in_hash: null,
        import_id: null,
        deleted_at: null,
        created_at: now,
        updated_at: now,
      }
      insert(store.contacts, row)
      count('contact.create')
      return { ok: true, row }
    },

    updateContact(contactId: number, input: unknown): Outcome<ContactRow> | null {
      const row = store.contacts.rows.get(contactId)
      if (!row) return null
      const parsed = contactUpdate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      assignGiven(row, parsed.data)
      row.updated_at = nowSeconds(deps.clock)
      changed(store.contacts)
      count('contact.update')
      return { ok: true, row }
    },

    /** Removed with its bookings, or (`contactDeletion: soft`) kept and marked `deleted_at`. */
    destroyContact(contactId: number): boolean {
      const row = store.contacts.rows.get(contactId)
      if (!row || row.deleted_at !== null) return false
      const now = nowSeconds(deps.clock)
      count('contact.destroy')
      if (deps.behaviour().contactDeletion === 'soft') {
        row.deleted_at = now
        row.updated_at = now
        store.contacts.deleted.set(contactId, now)
        changed(store.contacts)
        return true
      }
      remove(store.contacts, contactId, now)
      for (const bookingId of store.bookingsOfContact.get(contactId) ?? [])
        remove(store.bookings, bookingId, now)
      store.bookingsOfContact.delete(contactId)
      untagAll(store, contactId)
      return true
    },

    createBooking(input: unknown, userId: UserId): Outcome<BookingRow> {
      const parsed = bookingCreate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      const errors = contactErrors(parsed.data.contact_id)
      if (errors) return invalid(errors)
      const now = nowSeconds(deps.clock)
      const data = parsed.data
      const row: BookingRow = {
        ...data,
        id: deps.ids.next('booking'),
        group_id: data.group_id ?? null,
        note: data.note ?? null,
        duration: data.duration ?? 90,
        created_by_user_id: userId,
        company: data.company ?? null,
        mail_confirmation: data.mail_confirmation ?? false,
        status: data.status ?? 'open',
        webform: data.webform ?? false,
        created_at: now,
        updated_at: now,
      }
      insert(store.bookings, row)
      linkReferences(store, 'bookings', row)
      count('booking.create')
      return { ok: true, row }
    },

    updateBooking(bookingId: number, input: unknown): Outcome<BookingRow> | null {
      const row = store.bookings.rows.get(bookingId)
      if (!row) return null
      const parsed = bookingUpdate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      const errors = contactErrors(parsed.data.contact_id)
      if (errors) return invalid(errors)
      relinking(store, 'bookings', row, () => assignGiven(row, parsed.data))
      row.updated_at = nowSeconds(deps.clock)
      changed(store.bookings)
      count('booking.update')
      return { ok: true, row }
    },

    destroyBooking(bookingId: number): boolean {
      const row = store.bookings.rows.get(bookingId)
      if (!row) return false
      remove(store.bookings, bookingId, nowSeconds(deps.clock))
      unlinkReferences(store, 'bookings', row)
      count('booking.destroy')
      return true
    },
  }
}
