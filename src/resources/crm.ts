// The CRM's resources: records wrapped under their singular name, with includes that carry children.
import { bigint, boolean, date, integer, jsonb, numeric, text, timestamptz } from './columns.ts'
import { activities } from './crm-activities.ts'
import { attachments } from './crm-attachments.ts'
import {
  contactChildren,
  contactIncludes,
  customFields,
  dealPeople,
  noteLinkMappings,
  personDetails,
  projectPeople,
  tags,
} from './crm-children.ts'
import { filterGroups } from './crm-filter-groups.ts'
import { type Dependant, resource } from './types.ts'

/**
 * What the upstream deletes, silently, with a person, company, deal or project: its tasks, and (the
 * worst it plausibly does) every note linked to it, whatever else the note is linked to.
 */
const attachedTo = (attachableType: string): readonly Dependant[] => [
  { resource: 'crm.tasks', column: 'attachable_id', where: { attachable_type: attachableType } },
  {
    resource: 'crm.notes',
    through: 'crm.note_links',
    column: 'attachable_id',
    where: { attachable_type: attachableType },
  },
]

/**
 * What the upstream changes, silently, when a person or company goes (deleted, or merged into another
 * that takes over its memberships), without touching those records' `updated_at`: the deals and
 * projects that name the person among their people; the people with a position at the company, and its
 * deals and projects. Checked as the dependants above are: `show` writes them anew (404 tombstones).
 */
const memberships = {
  person: [
    { resource: 'crm.deals', through: 'crm.deal_people', column: 'person_id' },
    { resource: 'crm.projects', through: 'crm.project_people', column: 'person_id' },
  ],
  company: [
    { resource: 'crm.people', through: 'crm.positions', column: 'company_id' },
    { resource: 'crm.deals', column: 'company_id' },
    { resource: 'crm.projects', column: 'company_id' },
  ],
} as const satisfies Record<string, readonly Dependant[]>

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
    // The include `avatar`: one object, its fields not shown. Kept whole, whatever its shape.
    avatar: jsonb,
  },
  children: [...contactChildren, ...personDetails],
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [...attachedTo('Person'), ...memberships.person],
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
    avatar: jsonb,
  },
  children: contactChildren,
  softDeleteKey: null,
  routes: { show: true, count: true },
  dependants: [...attachedTo('Company'), ...memberships.company],
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
  dependants: attachedTo('Deal'),
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
  dependants: attachedTo('Project'),
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

export const customFieldTypes = resource({
  name: 'crm.custom_field_types',
  service: 'crm',
  path: 'custom_fields_types',
  wrapper: 'custom_fields_type',
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    position: integer,
    category: text,
    name: text,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  children: [],
  softDeleteKey: null,
  // Only the index is known (docs/upstream.md); a type missing from a complete walk is deleted.
  routes: { show: false, count: false },
  dependants: [],
})

export const notes = resource({
  name: 'crm.notes',
  service: 'crm',
  // The global index of notes ("protocols"); each element is wrapped under the key of its concrete
  // type (`protocol_object_note`, `protocol_user_note`, `protocol_attachment`, or one never seen).
  path: 'protocols',
  wrapper: '*',
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    user_id: bigint,
    name: text,
    content: text,
    format: text,
    confidential: boolean,
    badge: text,
    type: text,
    attachments_count: integer,
    comments_count: integer,
    updated_by_user_id: bigint,
    person_id: bigint,
    company_id: bigint,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  children: noteLinkMappings,
  softDeleteKey: null,
  // Show is known (docs/upstream.md); a count route is not published: deletions show to complete walks,
  // and to the checks of a deleted person's, company's, deal's or project's dependants.
  routes: { show: true, count: false },
  dependants: [],
})

/** The CRM's part of the resource table, in the order sweeps and status list them. */
export const crmResources = [
  people,
  companies,
  deals,
  projects,
  tasks,
  users,
  customFieldTypes,
  notes,
  activities,
  attachments,
  filterGroups,
] as const
