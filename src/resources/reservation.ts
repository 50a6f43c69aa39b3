// The reservation service's resources: bare records, no includes, no webhooks.
import { bigint, boolean, date, integer, text, timestamptz } from './columns.ts'
import { resource } from './types.ts'

export const contacts = resource({
  name: 'reservations.contacts',
  service: 'reservation',
  path: 'contacts',
  wrapper: null,
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    title: text,
    first: text,
    last: text,
    note: text,
    phone: text,
    phone2: text,
    mail: text,
    company: text,
    street: text,
    zip: text,
    city: text,
    // Returned as `false` when unset; the mapping of false to the listed values is not shown, so it is null.
    newsletter: { type: 'text', map: (value) => (value === false ? null : value) },
    created_at: timestamptz,
    updated_at: timestamptz,
    completed_bookings_count: integer,
    phone_clean: text,
    phone2_clean: text,
    newsletter_double_opt_in_hash: text,
    import_id: text,
    deleted_at: timestamptz,
  },
  children: [],
  softDeleteKey: 'deleted_at',
  // contacts/count is routed but its response form is not shown: nothing may depend on it.
  routes: { show: true, count: false },
  dependants: [{ resource: 'reservations.bookings', column: 'contact_id' }],
})

export const bookings = resource({
  name: 'reservations.bookings',
  service: 'reservation',
  path: 'bookings',
  wrapper: null,
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    type: text,
    group_id: bigint,
    area_id: bigint,
    contact_id: bigint,
    date: date,
    hour: integer,
    minute: integer,
    number_guests: integer,
    note: text,
    duration: integer,
    created_by_user_id: bigint,
    company: text,
    mail_confirmation: boolean,
    status: text,
    webform: boolean,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  children: [],
  softDeleteKey: null,
  routes: { show: true, count: false },
  dependants: [],
})

/** The reservation service's part of the resource table, in the order sweeps and status list them. */
export const reservationResources = [contacts, bookings] as const
