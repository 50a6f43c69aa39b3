// Generated contacts and bookings of the reservation account.
import { formatDate } from './clock.ts'
import * as names from './names.ts'
import { linkReferences } from './relations.ts'
import { BOOKING_STATES } from './reservation-account.ts'
import { ascii, DAY, type Generation } from './seeding.ts'
import { insert } from './store.ts'

export function seedReservations({ store, ids, random, options, time, count }: Generation): void {
  const contactIds: number[] = [...store.contacts.rows.keys()]
  for (let i = 0; i < count('contacts'); i++) {
    const female = random.chance(0.5)
    const first = random.pick(female ? names.FEMALE_FIRST_NAMES : names.MALE_FIRST_NAMES)
    const last = random.pick(names.LAST_NAMES)
    const place = random.chance(0.5) ? random.pick(names.CITIES) : null
    const newsletter = random.chance(0.5)
      ? null
      : random.pick(['subscribed', 'not_subscribed', 'unsubscribed', 'waiting_for_opt_in'])
    const created_at = time.created()
    const id = ids.next('contact')
    contactIds.push(id)
    insert(store.contacts, {
      id,
      title: random.chance(0.1) ? random.pick(names.TITLES) : null,
      first,
      last,
      note: random.chance(0.1) ? 'Stammgast, Fensterplatz' : null,
      phone: random.chance(0.7) ? `0${random.int(30, 991)} ${random.int(100_000, 9_999_999)}` : null,
      phone2: random.chance(0.3) ? `01${random.int(50, 79)} ${random.int(1_000_000, 99_999_999)}` : null,
      mail: random.chance(0.7)
        ? `${ascii(first)}.${ascii(last)}${random.int(1, 99)}@example.de`.toLowerCase()
        : null,
      company: random.chance(0.2) ? `${random.pick(names.COMPANY_WORDS)} GmbH` : null,
      street: place ? `${random.pick(names.STREETS)} ${random.int(1, 120)}` : null,
      zip: place?.zip ?? null,
      city: place?.city ?? null,
      newsletter,
      newsletter_double_opt_in_hash: newsletter === 'subscribed' ? random.int(0, 2 ** 48).toString(16) : null,
      import_id: random.chance(0.2) ? random.int(1, 40) : null,
      deleted_at: null,
      created_at,
      updated_at: time.updated(created_at),
    })
  }
  if (!contactIds.length) return
  for (let i = 0; i < count('bookings'); i++) {
    const contactId = random.pick(contactIds)
    const created_at = time.created()
    const day = created_at + random.int(0, 120) * DAY
    const past = day < options.now
    const webform = random.chance(0.3)
    const id = ids.next('booking')
    const recurring = random.chance(0.1)
    const booking = insert(store.bookings, {
      id,
      type: recurring ? 'RecurringBooking' : 'SingleBooking',
      // The first booking of a series names the group; these are all first bookings.
      group_id: recurring ? id : null,
      area_id: 14 + random.int(0, 20),
      contact_id: contactId,
      date: formatDate(day, options.offsetMinutes),
      hour: random.int(11, 22),
      minute: random.pick([0, 15, 30, 45]),
      number_guests: random.int(1, 12),
      note: random.chance(0.2) ? 'Kinderstuhl' : null,
      duration: random.chance(0.7) ? 90 : 120,
      created_by_user_id: webform ? null : random.int(1, 9),
      company: null,
      mail_confirmation: random.chance(0.5),
      status: past
        ? random.pick(['completed', 'completed', 'no_show', 'declined'])
        : random.pick(BOOKING_STATES.slice(0, 3)),
      webform,
      created_at,
      updated_at: time.updated(created_at),
    })
    linkReferences(store, 'bookings', booking)
  }
}
