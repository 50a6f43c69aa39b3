// The sandbox's ground truth, in memory. Rows hold what the upstream stores (timestamps as epoch
// seconds, children as optional arrays); the renderers turn them into the upstream's payloads.
// Plain objects in Maps keep 200,000 people within a benchmark's memory.
import type { WebhookModel } from '../src/resources/index.ts'
import { ATTACHABLE_TYPES, type AttachableType } from './kind.ts'
import { type KindRow, PLURALS, type Plural } from './kinds.ts'

export interface Stamped {
  id: number
  created_at: number
  updated_at: number
}

export interface Collection<R extends { id: number }> {
  readonly rows: Map<number, R>
  /** Id → when it was deleted (seconds): the ground truth of deletions. */
  readonly deleted: Map<number, number>
  /** Bumped on every change, so cached sort orders know when they are stale. */
  version: number
}

export function collection<R extends { id: number }>(): Collection<R> {
  return { rows: new Map(), deleted: new Map(), version: 0 }
}

export function insert<R extends { id: number }>(into: Collection<R>, row: R): R {
  into.rows.set(row.id, row)
  into.version++
  return row
}

export function changed(of: Collection<{ id: number }>): void {
  of.version++
}

export function remove(from: Collection<{ id: number }>, id: number, at: number): void {
  from.rows.delete(id)
  from.deleted.set(id, at)
  from.version++
}

// ---- CRM -------------------------------------------------------------------------------------

/** The models the CRM sends webhooks for: those of the resource table. */
export type HookModel = WebhookModel
export type { AttachableType } from './kind.ts'

export interface TagRow extends Stamped {
  name: string
  api_input: boolean
}

export interface AddrRow extends Stamped {
  atype: string | null
  primary: boolean | null
  street: string
  zip: string
  city: string
  state_code: string | null
  country_code: string | null
  country_name: string | null
}

export type DetailKind = 'tels' | 'emails' | 'homepages'

export interface DetailRow extends Stamped {
  kind: DetailKind
  atype: string
  name: string
  primary: boolean
  api_input: boolean
}

export interface PositionRow extends Stamped {
  company_id: number | null
  company_name: string | null
  name: string | null
  department: string | null
  primary_function: boolean
  former: boolean
}

export interface Tagged {
  tags?: TagRow[]
}

/** People and companies: what they carry beyond tags. */
export interface Reachable extends Tagged {
  addrs?: AddrRow[]
  details?: DetailRow[]
}

export interface PersonRow extends Stamped, Reachable {
  user_id: number | null
  country_code: string | null
  salutation: string | null
  title: string | null
  /** A string in current responses, an integer in older ones: both occur. */
  gender: string | number | null
  first_name: string | null
  name: string
  background: string | null
  created_by_user_id: number | null
  updated_by_user_id: number | null
  positions?: PositionRow[]
}

export interface CompanyRow extends Stamped, Reachable {
  name: string
  background: string | null
  user_id: number | null
  created_by_user_id: number | null
  updated_by_user_id: number | null
  is_own: boolean
  demo: boolean
  import_log_id: number | null
}

/** Deals and projects. */
export interface WorkRow extends Stamped, Tagged {
  user_id: number | null
  company_id: number | null
  name: string
  description: string | null
  target_date: string
  finished_at: number | null
  current_state: string
  created_by_user_id: number | null
  updated_by_user_id: number | null
  person_ids?: number[]
}

export interface DealRow extends WorkRow {
  /** Decimal strings, as the upstream returns them. */
  value: string
  value_type: string
  value_count: string
  currency: string
}

export type ProjectRow = WorkRow

export interface TaskRow extends Stamped {
  attachable_id: number | null
  attachable_type: AttachableType | null
  badge: string
  finished: boolean
  name: string
  precise_time: number | null
  user_id: number | null
  created_by_user_id: number | null
  updated_by_user_id: number | null
  comments_count: number
  end_time: number | null
  fuzzy: boolean
  entire_day: boolean
}

/** Notes ("protocols"): linked to any number of people, companies, deals and projects. */
export interface NoteRow extends Stamped {
  /** `ProtocolObjectNote`, `ProtocolUserNote`, `ProtocolAttachment`, or a type never seen before. */
  type: string
  user_id: number | null
  updated_by_user_id: number | null
  name: string | null
  content: string | null
  format: string
  confidential: boolean
  badge: string
  attachments_count: number
  comments_count: number
  person_ids: number[]
  company_ids: number[]
  deal_ids: number[]
  project_ids: number[]
}

/** A note's arrays of links, and the type of what each links to. */
export const NOTE_LINKS = [
  { key: 'person_ids', type: 'Person' },
  { key: 'company_ids', type: 'Company' },
  { key: 'deal_ids', type: 'Deal' },
  { key: 'project_ids', type: 'Project' },
] as const satisfies readonly { key: keyof NoteRow; type: AttachableType }[]

export interface UserRow {
  id: number
  first: string
  name: string
  login: string
  active: boolean
}

export interface HookRow extends Stamped {
  model: HookModel
  event: 'create' | 'update' | 'destroy'
  target_url: string
  object_type: 'nested' | 'flat' | 'api' | 'lean'
  includes: string | null
  filter_group_id: number | null
  verified: boolean
  failed: number
  failed_at: number | null
}

// ---- reservation service ---------------------------------------------------------------------

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

/** A collection per entry of the table of kinds (kinds.ts), under its plural. */
export type KindCollections = { [P in Plural]: Collection<KindRow<P>> }

export interface Store extends KindCollections {
  users: Collection<UserRow>
  hooks: Collection<HookRow>
  contacts: Collection<ContactRow>
  bookings: Collection<BookingRow>
  tags: Collection<ReservationTagRow>
  webforms: Collection<WebformRow>
  // Reverse indexes (see relations.ts): who points at a record, so a destroy finds its dependants.
  /** Company id → ids of the people with a position there (also the companies' `positions` include). */
  staff: Map<number, Set<number>>
  /** Person id → deals and projects that name them among their people. */
  dealsOfPerson: Map<number, Set<number>>
  projectsOfPerson: Map<number, Set<number>>
  /** Company id → its deals and projects. */
  dealsOfCompany: Map<number, Set<number>>
  projectsOfCompany: Map<number, Set<number>>
  /** Attachable type → record id → its tasks. */
  tasksOf: Record<AttachableType, Map<number, Set<number>>>
  /** Attachable type → record id → the notes linked to it. */
  notesOf: Record<AttachableType, Map<number, Set<number>>>
  /** Contact id → ids of its bookings. */
  bookingsOfContact: Map<number, Set<number>>
  /** Contact id → ids of its tags, in the order they were added; and tag id → the contacts carrying it. */
  tagsOfContact: Map<number, Set<number>>
  contactsOfTag: Map<number, Set<number>>
}

export function createStore(): Store {
  const kinds = Object.fromEntries(PLURALS.map((plural) => [plural, collection()])) as KindCollections
  return {
    ...kinds,
    users: collection(),
    hooks: collection(),
    contacts: collection(),
    bookings: collection(),
    tags: collection(),
    webforms: collection(),
    staff: new Map(),
    dealsOfPerson: new Map(),
    projectsOfPerson: new Map(),
    dealsOfCompany: new Map(),
    projectsOfCompany: new Map(),
    tasksOf: Object.fromEntries(ATTACHABLE_TYPES.map((type) => [type, new Map()])) as Store['tasksOf'],
    notesOf: Object.fromEntries(ATTACHABLE_TYPES.map((type) => [type, new Map()])) as Store['notesOf'],
    bookingsOfContact: new Map(),
    tagsOfContact: new Map(),
    contactsOfTag: new Map(),
  }
}

export function link(index: Map<number, Set<number>>, key: number, id: number): void {
  let members = index.get(key)
  if (!members) {
    members = new Set()
    index.set(key, members)
  }
  members.add(id)
}

export function unlink(index: Map<number, Set<number>>, key: number, id: number): void {
  const members = index.get(key)
  members?.delete(id)
  if (members?.size === 0) index.delete(key)
}
