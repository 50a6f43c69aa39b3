// The reservation service: bare records (no wrapper), includes as `include_<name>=true`, a contact's
// bookings, and a count whose answer is not documented.
import { bookings, contacts } from '../resources/index.ts'
import {
  type RejectedRecordError,
  UpstreamGoneError,
  UpstreamRequestError,
  UpstreamResponseError,
} from './errors.ts'
import {
  type ClientDeps,
  type ClientSettings,
  createReader,
  type Order,
  openUpstream,
  type ResourceReader,
} from './reader.ts'
import { type FetchedRecord, parseRecords } from './records.ts'

export interface ReservationSettings extends ClientSettings {
  /**
   * The document gives `order` as `<criterion>-<direction>` with criteria such as `updated_at`
   * (`updated_at-desc`), and its example as `created-at-asc`; which one the service parses is not
   * shown. The client starts with this one (`underscore` unless given) and learns from the answers:
   * a page out of order is asked again in the other spelling once, and the one that orders is kept.
   */
  orderSpelling?: Spelling
}

type Spelling = 'underscore' | 'hyphen'
const other = (spelling: Spelling): Spelling => (spelling === 'underscore' ? 'hyphen' : 'underscore')

export type ContactBookings =
  | { status: 'found'; records: FetchedRecord[]; rejected: RejectedRecordError[]; fetchedAt: Date }
  | { status: 'gone'; fetchedAt: Date }

export interface ReservationClient extends ResourceReader {
  /** `GET /api/contacts/{id}/bookings`; `gone` when the contact does not exist. */
  contactBookings(contactId: number): Promise<ContactBookings>
  /** The number of contacts, or null when the answer is not a number the client recognises. */
  countContacts(): Promise<number | null>
}

export function spellOrder(order: Order, spelling: Spelling): string {
  const field = spelling === 'hyphen' ? order.field.replaceAll('_', '-') : order.field
  return `${field}-${order.direction}`
}

export function createReservationClient(settings: ReservationSettings, deps: ClientDeps): ReservationClient {
  const upstream = openUpstream('reservation', settings, deps, (_url, headers) => {
    headers.set('authorization', `Token token="${settings.apiKey}"`)
  })
  // Learnt for the life of this client: the spelling in use, and whether it is settled.
  let spelling: Spelling = settings.orderSpelling ?? 'underscore'
  let settled = false
  let tried = false
  const reader = createReader({
    upstream,
    settings,
    logger: deps.logger,
    indexQuery: (resource, query) => ({
      perpage: query.perPage,
      page: query.page,
      order: query.order && spellOrder(query.order, spelling),
      ...includeQuery(query.includes ?? resource.includes),
    }),
    showQuery: (resource, includes) => includeQuery(includes ?? resource.includes),
    orderSpelling: {
      tryOther() {
        if (settled || tried) return false
        tried = true
        spelling = other(spelling)
        return true
      },
      keep(inOrder) {
        if (settled) return
        // Neither spelling ordered the page: back to the first, and no more tries.
        if (!inOrder && tried) spelling = other(spelling)
        settled = inOrder || tried
      },
    },
  })

  return {
    ...reader,

    async contactBookings(contactId) {
      try {
        const path = `contacts/${contactId}/bookings`
        const answer = await upstream.send({ method: 'GET', path, route: 'contacts.bookings' })
        if (!Array.isArray(answer.body)) {
          const line = {
            service: 'reservation' as const,
            method: 'GET',
            path: `/api/${path}`,
            sentAt: answer.fetchedAt,
          }
          throw new UpstreamResponseError(
            line,
            answer.status,
            answer.body,
            'bookings of a contact are not an array',
          )
        }
        return { status: 'found', ...parseRecords(bookings, answer.body), fetchedAt: answer.fetchedAt }
      } catch (error) {
        if (error instanceof UpstreamGoneError) return { status: 'gone', fetchedAt: error.sentAt }
        throw error
      }
    },

    async countContacts() {
      try {
        const answer = await upstream.send({
          method: 'GET',
          path: `${contacts.path}/count`,
          route: 'contacts.count',
        })
        return countIn(answer.body)
      } catch (error) {
        // Nothing may depend on this route: a refusal is "unknown", only auth and outages surface.
        if (error instanceof UpstreamGoneError || error instanceof UpstreamRequestError) return null
        throw error
      }
    },
  }
}

/** Includes as the reservation service asks for them: `include_tags=true`, one parameter each. */
export function includeQuery(includes: readonly string[]): Record<string, string> {
  return Object.fromEntries(includes.map((name) => [`include_${name}`, 'true']))
}

/** A count in any form seen in similar services: 42, "42", {count}, {total}, {total_entries}, {contacts: 42}. */
export function countIn(body: unknown): number | null {
  const candidates =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? ['count', 'total', 'total_entries', 'contacts'].map((key) => (body as Record<string, unknown>)[key])
      : [body]
  for (const candidate of candidates) {
    const value =
      typeof candidate === 'string' && /^\d+$/.test(candidate.trim()) ? Number(candidate) : candidate
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value
  }
  return null
}
