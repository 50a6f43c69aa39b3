// The data dictionary of the reservation service's tables, from its vendor's API document and what is
// known of the real service (docs/upstream.md).
import type { contactTags, reservationResources } from '../reservation.ts'
import type { TableText } from './types.ts'

type ReservationResource = (typeof reservationResources)[number]

const ACCOUNT = 'The reservation account.'
const CREATED = 'When the record was created upstream.'
const UPDATED = 'When the record was last changed upstream.'

export const reservationTableTexts = {
  'reservations.contacts': {
    table:
      "Contacts (guests) of the reservation service; each contact's tags are in reservations.contact_tags. " +
      'Polled (no webhooks).',
    columns: {
      id: "The contact's id.",
      account_id: ACCOUNT,
      title: 'Title or form of address.',
      first: 'First name.',
      last: 'Last name.',
      note: 'Background notes.',
      phone: 'Phone.',
      phone2: 'Second number (mobile).',
      mail: 'E-mail address.',
      company: 'Company.',
      street: 'Street and house number.',
      zip: 'Postcode.',
      city: 'City.',
      newsletter:
        "not_subscribed, subscribed, waiting_for_opt_in, bounced or unsubscribed; the upstream's false " +
        'is stored as null.',
      created_at: CREATED,
      updated_at: UPDATED,
      completed_bookings_count: 'Number of completed bookings.',
      phone_clean: 'Normalised phone (meaning not published).',
      phone2_clean: 'Normalised second phone (meaning not published).',
      newsletter_double_opt_in_hash: 'Newsletter opt-in hash (meaning not published).',
      import_id: 'The import it came from (meaning not published).',
      deleted_at:
        "The upstream's own deletion mark: a contact that carries it is stored with _deleted_at set.",
    },
  },
  'reservations.bookings': {
    table:
      'Bookings (reservations of an area for a contact, a date and time, and a number of guests). The ' +
      "contact each booking embeds stays in _raw -> 'contact'; join reservations.contacts on contact_id.",
    columns: {
      id: "The booking's id.",
      account_id: ACCOUNT,
      type: 'SingleBooking or RecurringBooking.',
      group_id: 'The first booking of a recurring series (null for a single booking).',
      area_id: 'The room or place.',
      contact_id: 'The contact (reservations.contacts).',
      date: 'Day of the booking.',
      hour: 'Hour of the booking.',
      minute: 'Minute of the booking (0-59).',
      number_guests: 'Number of guests.',
      note: 'Note.',
      duration: 'Duration in minutes (upstream default 90).',
      created_by_user_id: 'The user who created it (null when not created by a user).',
      company: 'Company name.',
      mail_confirmation: 'True when the guest wants confirmations by e-mail.',
      status: 'open, accepted, auto_accepted, currently_active, declined, completed or no_show.',
      webform: 'True when the booking came in through an online form.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'reservations.tags': {
    table:
      "The reservation account's tags (fields not published: other fields stay in _raw). A tag missing " +
      'from a complete read is marked deleted.',
    columns: {
      id: "The tag's id.",
      name: 'The tag.',
      created_at: 'When created upstream, when given (null otherwise).',
      updated_at:
        'When last changed upstream, when given (null otherwise); not used to order or to pick a newer ' +
        'version: the later fetch wins.',
    },
  },
  'reservations.webforms': {
    table:
      "The reservation account's online booking forms (fields not published: every other field is in " +
      '_raw). A webform missing from a complete read is marked deleted.',
    columns: {
      id: "The webform's id.",
      name: "The form's name, when given.",
    },
  },
} satisfies { [R in ReservationResource as R['name']]: TableText<R['columns']> }

export const reservationChildTexts = {
  'reservations.contact_tags': {
    table:
      "Each contact's tags (include_tags=true), one row per tag; _parent_id is the contact. Up to date " +
      "as of the contact's last read: a tag change may leave the contact's updated_at alone.",
    columns: {
      id: 'The tag (reservations.tags).',
      name: 'Its name.',
    },
  },
} satisfies { [C in typeof contactTags as C['table']]: TableText<C['columns']> }
