// The rows the store (store.ts) holds of the CRM (the reservation service's: reservation-rows.ts): what
// the upstream stores, timestamps as epoch seconds, children as optional arrays; the renderers turn them
// into the upstream's payloads. Below everything that acts on them: `KindRows` names each kind's row by
// its plural, the table of kinds (kinds.ts) is typed by it, and a kind's file imports its row from
// here, so that no kind needs the table.
import type { WebhookModel } from '../src/resources/index.ts'

export interface Stamped {
  id: number
  created_at: number
  updated_at: number
}

/** The models the CRM sends webhooks for: those of the resource table. */
export type HookModel = WebhookModel

/** What tasks (and tags, addresses) attach to. */
export const ATTACHABLE_TYPES = ['Person', 'Company', 'Deal', 'Project'] as const
export type AttachableType = (typeof ATTACHABLE_TYPES)[number]

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

/** A person's or company's picture (include `avatar`, one object). Its fields are not shown upstream. */
export interface AvatarRow extends Stamped {
  filename: string
  content_type: string
  /** Bytes. */
  size: number
}

/**
 * An entry of a person's or company's `connections`, whose shape is not shown upstream: a link to
 * another person or company under a label, or a profile on a network (`xing`), which the sandbox
 * renders without an id or stamps, so that items of two shapes, some without an id, come in one array.
 * The row's `id` is the sandbox's own either way.
 */
export type ConnectionRow = Stamped &
  (
    | { kind: 'record'; connectable_type: 'Person' | 'Company'; connectable_id: number; name: string }
    | { kind: 'network'; network: string; url: string }
  )

/**
 * A person's historic event (a birthday), in no include: read on `people/{id}/historic_events`
 * (person-details.ts). The spec names its fields; their types and the shape on the route are not shown.
 */
export interface HistoricEventRow extends Stamped {
  /** The date as entered: `1984-03-12`, `12.03.1984`, `12.03.` (no year). */
  unparsed_date: string | null
  atype: string | null
  desc: string | null
}

/** A person's assistant (`assis`), in no include: read on `people/{id}/assis` (person-details.ts). */
export interface AssiRow extends Stamped {
  name: string | null
  tel: string | null
  email: string | null
}

export interface Tagged {
  tags?: TagRow[]
}

/** People and companies: what they carry beyond tags. */
export interface Reachable extends Tagged {
  addrs?: AddrRow[]
  details?: DetailRow[]
  avatar?: AvatarRow | null
  connections?: ConnectionRow[]
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
  historic_events?: HistoricEventRow[]
  assis?: AssiRow[]
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

export type ActivityVerb = 'create' | 'update' | 'destroy'

/** An entry of the CRM's activity log (activities.ts). */
export interface ActivityRow extends Stamped {
  user_id: number | null
  attachable_id: number
  attachable_type: string
  verb: ActivityVerb
  confidential: boolean
  change: Record<string, unknown>
}

/** What an attachment is attached to: a note (`Protocol`), or a person, company, deal or project. */
export const ATTACHMENT_TARGETS = ['Protocol', 'Person', 'Company', 'Deal', 'Project'] as const
export type AttachmentTarget = (typeof ATTACHMENT_TARGETS)[number]

/** A file attached to a note or a record (attachments.ts). */
export interface AttachmentRow extends Stamped {
  uuid: string
  user_id: number | null
  attachable_id: number | null
  attachable_type: AttachmentTarget | null
  content_type: string
  filename: string
  attachment_category_id: number | null
  /** Bytes of the file, when its content is made from the row. */
  size: number
  /** The file as given on create (Base64), when it was. */
  data?: string
}

/** A saved filter (filter-groups.ts). */
export interface FilterGroupRow extends Stamped {
  name: string
  model_type: AttachableType
  /** Members: the records whose name starts with one of these letters (any case)... */
  letters: string | null
  /** ...or exactly these records, while they exist (when `letters` is null). */
  member_ids: number[]
}

/** A kind built from its entry in the resource table (plain-kind.ts): the entry's columns. */
export type PlainRow = Stamped & Record<string, unknown>

/** The row each entry of the table of kinds (kinds.ts) stores, under its plural. */
export interface KindRows {
  people: PersonRow
  companies: CompanyRow
  deals: DealRow
  projects: ProjectRow
  tasks: TaskRow
  custom_fields_types: PlainRow
  protocols: NoteRow
  filter_groups: FilterGroupRow
  activities: ActivityRow
  attachments: AttachmentRow
}

/** A CRM kind's name: the key of its entry in the table of kinds, the path of its resource. */
export type Plural = keyof KindRows
