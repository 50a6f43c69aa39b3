// The reservation service's resources: bare records, no webhooks. Contacts include their tags
// (`include_tags=true`). Tags and webforms are in the route list only: their fields, paging, order,
// count and show are not shown, so their indexes are read whole and their deletions are absences.
import { bigint, boolean, date, integer, text, timestamptz } from './columns.ts'
import { child, resource } from './types.ts'

/** A contact's tags, from `include_tags=true`: `[{id, name}]`. */
export const contactTags = child({
  table: 'reservations.contact_tags',
  columns: { id: bigint, name: text },
})

export const contacts = resource({
  name: 'reservations.contacts',
  service: 'reservation',
  path: 'contacts',
  wrapper: null,
  includes: ['tags'],
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
  // A tag added or removed may leave the contact's updated_at alone (not shown): only a complete walk
  // of the contacts sees it.
  children: [{ child: contactTags, key: 'tags' }],
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

// Tags and webforms: routed (`/api/tags`, `/api/webforms`), nothing else shown. Their show is not
// used: what it answers for a deleted record is not shown either, and a walk of every page is cheap
// for lists this size. A record missing from a complete walk is tombstoned.
export const reservationTags = resource({
  name: 'reservations.tags',
  service: 'reservation',
  path: 'tags',
  wrapper: null,
  includes: [],
  webhookModel: null,
  // Timestamps when given; the index is not known to order by them.
  columns: { id: bigint, name: text, created_at: timestamptz, updated_at: timestamptz },
  ordered: false,
  children: [],
  softDeleteKey: null,
  routes: { show: false, count: false },
  dependants: [],
})

export const webforms = resource({
  name: 'reservations.webforms',
  service: 'reservation',
  path: 'webforms',
  wrapper: null,
  includes: [],
  webhookModel: null,
  columns: { id: bigint, name: text },
  children: [],
  softDeleteKey: null,
  routes: { show: false, count: false },
  dependants: [],
})

/** The reservation service's part of the resource table, in the order sweeps and status list them. */
export const reservationResources = [contacts, bookings, reservationTags, webforms] as const
