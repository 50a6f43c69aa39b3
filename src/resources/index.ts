// The table of mirrored resources. Each resource is described once here; the store, the API
// client, the backfill and the CLI read this table instead of knowing resources by name.
// The migrations are frozen SQL and do not import this file; test/schema.test.ts proves the two agree.
import {
  bigint,
  boolean,
  type Column,
  date,
  integer,
  jsonb,
  numeric,
  type SqlValue,
  text,
  timestamptz,
} from './columns.ts'

export type Columns = Record<string, Column>

export type RowOf<C extends Columns> = {
  [K in keyof C]: C[K] extends Column<infer T> ? SqlValue<T> | null : never
}

export interface ChildTable<Name extends string = string, C extends Columns = Columns> {
  table: Name
  columns: C
  /** A column that holds the parent's id (e.g. `deal_id`), filled from the parent rather than the item. */
  parentColumn?: string
}

export interface ChildMapping {
  child: ChildTable
  /** Key of the included array inside the upstream record. */
  key: string
  /** Values for columns the item does not carry (e.g. `type: 'Tel'` for items of `tels`). */
  defaults?: Record<string, unknown>
}

/** Records of another resource that the upstream deletes, without a word, together with their parent. */
export interface Dependant {
  /** The dependant resource (qualified name). */
  resource: string
  /** Its column holding the parent's id. */
  column: string
  /** Further columns that must hold these values (e.g. `attachable_type: 'Person'`). */
  where?: Readonly<Record<string, string>>
}

export interface Resource<Name extends string = string, C extends Columns = Columns> {
  name: Name
  service: 'crm' | 'reservation'
  /** Path below `${base}/api/`. */
  path: string
  /** Key a record is wrapped under (CRM), or null for bare records (reservation service). */
  wrapper: string | null
  /** Includes requested with every index page and show, so that children arrive with the record. */
  includes: readonly string[]
  /** Model name of CRM webhooks for this resource, or null when the upstream sends none. */
  webhookModel: 'person' | 'company' | 'deal' | 'project' | null
  columns: C
  children: readonly ChildMapping[]
  /** Upstream key whose non-null value means the record is deleted (the upstream's own soft delete). */
  softDeleteKey: string | null
  /** Routes the upstream offers beyond the index. */
  routes: { show: boolean; count: boolean }
  /**
   * Silent cascades: when a record of this resource is tombstoned, these dependants of it are checked
   * with `show` (and tombstoned on 404) at once, rather than at the next reconciliation.
   */
  dependants: readonly Dependant[]
}

const child = <Name extends string, C extends Columns>(table: ChildTable<Name, C>) => table
const resource = <Name extends string, C extends Columns>(definition: Resource<Name, C>) => definition

// A change to a child table's columns, or to the mappings below, needs a migration that rewrites the
// rows it changes: a parent written again with the same includes leaves its child rows as they are
// (src/store/records.ts).
// ---- child tables ---------------------------------------------------------------------------

const attached = { attachable_id: bigint, attachable_type: text }
const stamps = { created_at: timestamptz, updated_at: timestamptz }

export const tags = child({
  table: 'crm.tags',
  columns: { id: bigint, account_id: bigint, ...attached, name: text, api_input: boolean, ...stamps },
})

export const addresses = child({
  table: 'crm.addresses',
  columns: {
    id: bigint,
    ...attached,
    atype: text,
    primary: boolean,
    street: text,
    zip: text,
    city: text,
    country_code: text,
    state_code: text,
    country_name: text,
    ...stamps,
  },
})

export const contactDetails = child({
  table: 'crm.contact_details',
  columns: {
    id: bigint,
    type: text,
    ...attached,
    atype: text,
    name: text,
    primary: boolean,
    name_clean: text,
    api_input: boolean,
    ...stamps,
  },
})

export const positions = child({
  table: 'crm.positions',
  columns: {
    id: bigint,
    account_id: bigint,
    person_id: bigint,
    company_id: bigint,
    company_name: text,
    name: text,
    department: text,
    primary_function: boolean,
    former: boolean,
    ...stamps,
  },
})

export const customFields = child({
  table: 'crm.custom_fields',
  columns: {
    id: bigint,
    custom_fields_type_id: bigint,
    ...attached,
    name: text,
    value: text,
    ...stamps,
  },
})

export const dealPeople = child({
  table: 'crm.deal_people',
  columns: { deal_id: bigint, person_id: { type: 'bigint', from: 'id' }, first_name: text, name: text },
  parentColumn: 'deal_id',
})

export const projectPeople = child({
  table: 'crm.project_people',
  columns: { project_id: bigint, person_id: { type: 'bigint', from: 'id' }, first_name: text, name: text },
  parentColumn: 'project_id',
})

export const childTables = [
  tags,
  addresses,
  contactDetails,
  positions,
  customFields,
  dealPeople,
  projectPeople,
]

const contactChildren: ChildMapping[] = [
  { child: tags, key: 'tags' },
  { child: addresses, key: 'addrs' },
  { child: contactDetails, key: 'tels', defaults: { type: 'Tel' } },
  { child: contactDetails, key: 'emails', defaults: { type: 'Email' } },
  { child: contactDetails, key: 'homepages', defaults: { type: 'Homepage' } },
  { child: positions, key: 'positions' },
  { child: customFields, key: 'custom_fields' },
]
const contactIncludes = [
  'tags',
  'addrs',
  'tels',
  'emails',
  'homepages',
  'positions',
  'custom_fields',
] as const

// ---- CRM ------------------------------------------------------------------------------------

export const people = resource({
  name: 'crm.people',
  service: 'crm',
  path: 'people',
  wrapper: 'person',
  includes: contactIncludes,
  webhookModel: 'person',
  columns: {
    id: bigint,
    account_id: bigint,
    salutation: text,
    title: text,
    gender: text,
    country_code: text,
    first_name: text,
    name: text,
    background: text,
    user_id: bigint,
    created_at: timestamptz,
    updated_at: timestamptz,
    created_by_user_id: bigint,
    updated_by_user_id: bigint,
    responsible_user_natural_name: text,
    salutation_official: text,
    salutation_formal: text,
    salutation_informal: text,
    user: jsonb,
  },
  children: contactChildren,
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [{ resource: 'crm.tasks', column: 'attachable_id', where: { attachable_type: 'Person' } }],
})

export const companies = resource({
  name: 'crm.companies',
  service: 'crm',
  path: 'companies',
  wrapper: 'company',
  includes: contactIncludes,
  webhookModel: 'company',
  columns: {
    id: bigint,
    account_id: bigint,
    name: text,
    background: text,
    created_at: timestamptz,
    updated_at: timestamptz,
    user_id: bigint,
    created_by_user_id: bigint,
    is_own: boolean,
    demo: boolean,
    import_log_id: bigint,
  },
  children: contactChildren,
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [{ resource: 'crm.tasks', column: 'attachable_id', where: { attachable_type: 'Company' } }],
})

const workColumns = {
  id: bigint,
  account_id: bigint,
  user_id: bigint,
  company_id: bigint,
  name: text,
  description: text,
}

export const deals = resource({
  name: 'crm.deals',
  service: 'crm',
  path: 'deals',
  wrapper: 'deal',
  includes: ['tags', 'people', 'custom_fields'],
  webhookModel: 'deal',
  columns: {
    ...workColumns,
    value: numeric,
    value_type: text,
    value_count: numeric,
    currency: text,
    target_date: date,
    finished_at: timestamptz,
    current_state: text,
    created_at: timestamptz,
    updated_at: timestamptz,
    person_ids_set: text,
  },
  children: [
    { child: tags, key: 'tags' },
    { child: dealPeople, key: 'people' },
    { child: customFields, key: 'custom_fields' },
  ],
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [{ resource: 'crm.tasks', column: 'attachable_id', where: { attachable_type: 'Deal' } }],
})

export const projects = resource({
  name: 'crm.projects',
  service: 'crm',
  path: 'projects',
  wrapper: 'project',
  includes: ['tags', 'people', 'custom_fields'],
  webhookModel: 'project',
  columns: {
    ...workColumns,
    target_date: date,
    finished_at: timestamptz,
    current_state: text,
    created_at: timestamptz,
    updated_at: timestamptz,
    person_ids_set: text,
  },
  children: [
    { child: tags, key: 'tags' },
    { child: projectPeople, key: 'people' },
    { child: customFields, key: 'custom_fields' },
  ],
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [{ resource: 'crm.tasks', column: 'attachable_id', where: { attachable_type: 'Project' } }],
})

export const tasks = resource({
  name: 'crm.tasks',
  service: 'crm',
  path: 'tasks',
  wrapper: 'task',
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    attachable_id: bigint,
    attachable_type: text,
    badge: text,
    finished: boolean,
    name: text,
    precise_time: timestamptz,
    user_id: bigint,
    created_by_user_id: bigint,
    updated_by_user_id: bigint,
    created_at: timestamptz,
    updated_at: timestamptz,
    comments_count: integer,
    end_time: timestamptz,
    fuzzy: boolean,
    entire_day: boolean,
  },
  children: [],
  softDeleteKey: null,
  // The spec routes GET /tasks/{id}; a count route for tasks is not shown.
  routes: { show: true, count: false },
  dependants: [],
})

export const users = resource({
  name: 'crm.users',
  service: 'crm',
  path: 'users',
  wrapper: 'user',
  includes: [],
  webhookModel: null,
  columns: { id: bigint, first: text, name: text, login: text },
  children: [],
  softDeleteKey: null,
  // "Only index and search exist."
  routes: { show: false, count: false },
  dependants: [],
})

// ---- reservation service --------------------------------------------------------------------

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

export const resources = [people, companies, deals, projects, tasks, users, contacts, bookings] as const

export type AnyResource = (typeof resources)[number]
export type ResourceName = AnyResource['name']
export const resourceNames = resources.map((r) => r.name) as ResourceName[]

export function findResource(name: string): AnyResource | undefined {
  return resources.find((r) => r.name === name)
}

export function resourceByWebhookModel(model: string): AnyResource | undefined {
  const wanted = model.toLowerCase()
  return resources.find((r) => r.webhookModel === wanted)
}

/** Whether the resource's rows are ordered by the upstream's `updated_at` (all but users). */
export function hasUpdatedAt(resource: Resource): boolean {
  return 'updated_at' in resource.columns
}

export type HookObjectType = 'lean' | 'api' | 'nested' | 'flat'

/**
 * Includes a hook of that object type asks for: with `nested` and `api` the payload carries the
 * resource's includes, so that it can be applied without a `show`; `lean` and `flat` carry none.
 */
export function hookIncludes(model: string, objectType: HookObjectType): string | undefined {
  if (objectType !== 'nested' && objectType !== 'api') return undefined
  const includes = resourceByWebhookModel(model)?.includes ?? []
  return includes.length > 0 ? includes.join(',') : undefined
}
