// The rows the store (store.ts) holds of the reservation service, as rows.ts holds the CRM's; keyed by
// `ReservationRows`, which the table of reservation kinds (reservation-kinds.ts) is typed by.
import type { Stamped } from './rows.ts'

export interface ContactRow extends Stamped {
  title: string | null
  first: string | null
  last: string
  note: string | null
  phone: string | null
  phone2: string | null
  mail: string | null
  company: string | null
  street: string | null
  zip: string | null
  city: string | null
  newsletter: string | null
  newsletter_double_opt_in_hash: string | null
  import_id: number | null
  deleted_at: number | null
}

export interface BookingRow extends Stamped {
  type: string
  group_id: number | null
  area_id: number
  contact_id: number
  date: string
  hour: number
  minute: number
  number_guests: number
  note: string | null
  duration: number
  created_by_user_id: number | null
  company: string | null
  mail_confirmation: boolean
  status: string
  webform: boolean
}

/** A tag of the reservation account; contacts carry it (`tagsOfContact`). */
export interface ReservationTagRow extends Stamped {
  name: string
}

/** An online booking form. Its fields are not shown: these are what such a form plausibly has. */
export interface WebformRow extends Stamped {
  name: string
  active: boolean
  area_id: number | null
  token: string
}

/** The row each entry of the table of reservation kinds (reservation-kinds.ts) stores, under its key. */
export interface ReservationRows {
  contacts: ContactRow
  bookings: BookingRow
  tags: ReservationTagRow
  webforms: WebformRow
}

export type ReservationCollection = keyof ReservationRows
