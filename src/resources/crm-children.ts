// The CRM's child tables: items that a record's includes carry (tags, addresses, ...), mirrored in
// tables of their own. They enter the table through the mappings of the resources that include them;
// `childTables` (src/resources/index.ts) is derived from those mappings.
import { bigint, boolean, text, timestamptz } from './columns.ts'
import { type ChildMapping, child } from './types.ts'

// A change to a child table's columns, or to the mappings below, needs a migration that rewrites the
// rows it changes: a parent written again with the same includes leaves its child rows as they are
// (src/store/records.ts).

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

/**
 * What a note (crm.notes) is linked to: one row per id of its `person_ids`, `company_ids`, `deal_ids`
 * and `project_ids` (see `noteLinkMappings`).
 */
export const noteLinks = child({
  table: 'crm.note_links',
  columns: { attachable_type: text, attachable_id: bigint },
})

/** A note's arrays of linked ids, each id a row of crm.note_links under its attachable type. */
export const noteLinkMappings = [
  { child: noteLinks, key: 'person_ids', idColumn: 'attachable_id', defaults: { attachable_type: 'Person' } },
  {
    child: noteLinks,
    key: 'company_ids',
    idColumn: 'attachable_id',
    defaults: { attachable_type: 'Company' },
  },
  { child: noteLinks, key: 'deal_ids', idColumn: 'attachable_id', defaults: { attachable_type: 'Deal' } },
  {
    child: noteLinks,
    key: 'project_ids',
    idColumn: 'attachable_id',
    defaults: { attachable_type: 'Project' },
  },
] satisfies readonly ChildMapping[]

/**
 * The connections of people and companies (include `connections`), whose shape the upstream does not
 * show: every item is a row at its place, kept whole in `_raw`, whatever its shape; `id` is typed when
 * the item has one. Keyed by place like every child table, so items without an id, or two with one
 * id, never fail a write.
 */
export const connections = child({
  table: 'crm.connections',
  columns: { id: bigint },
})

/**
 * A person's historic events (birthdays): in no include, read per person from
 * `people/{id}/historic_events` (see `personDetails`). The upstream's `desc` is `description` here, as
 * `desc` is a reserved word in SQL.
 */
export const historicEvents = child({
  table: 'crm.historic_events',
  columns: { id: bigint, unparsed_date: text, atype: text, description: { type: 'text', from: 'desc' } },
})

/** A person's assistants (upstream `assis`): in no include, read per person from `people/{id}/assis`. */
export const assistants = child({
  table: 'crm.assistants',
  columns: { id: bigint, name: text, tel: text, email: text },
})

/**
 * What a person has that no include carries: read per person by the details pass (src/sync/details/),
 * one listing a route, and replaced whole with each read.
 */
export const personDetails = [
  { child: historicEvents, key: 'historic_events', route: 'historic_events', anyShape: true },
  { child: assistants, key: 'assis', route: 'assis', anyShape: true },
] satisfies readonly ChildMapping[]

/**
 * Children of people and companies, and the includes that carry them. Their `avatar` (one object, its
 * fields not shown) is no child table but a jsonb column of its own on crm.people and crm.companies.
 */
export const contactChildren = [
  { child: tags, key: 'tags' },
  { child: addresses, key: 'addrs' },
  { child: contactDetails, key: 'tels', defaults: { type: 'Tel' } },
  { child: contactDetails, key: 'emails', defaults: { type: 'Email' } },
  { child: contactDetails, key: 'homepages', defaults: { type: 'Homepage' } },
  { child: positions, key: 'positions' },
  { child: customFields, key: 'custom_fields' },
  { child: connections, key: 'connections', anyShape: true },
] satisfies readonly ChildMapping[]
export const contactIncludes = [
  'tags',
  'addrs',
  'tels',
  'emails',
  'homepages',
  'positions',
  'custom_fields',
  'avatar',
  'connections',
] as const
