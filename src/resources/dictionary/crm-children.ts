// The data dictionary of the CRM's child tables (sub-objects that a record's includes carry) and of the
// members of its filter groups.
import type { AnyChildTable } from '../index.ts'
import type { TableText } from './types.ts'

type CrmChild = Extract<AnyChildTable, { table: `crm.${string}` }>

const ACCOUNT = 'The CRM account.'
const CREATED = "The sub-object's creation time upstream."
const UPDATED = "The sub-object's last change upstream."
const OF_CONTACT = 'Id of the person or company (see attachable_type).'
const CONTACT_TYPE = 'Person or Company.'

export const crmChildTexts = {
  'crm.tags': {
    table:
      'Tags of people, companies, deals and projects (include tags), one row per tag a record carries; ' +
      '_parent_resource and _parent_id name the record.',
    columns: {
      id: "The tag's id.",
      account_id: ACCOUNT,
      attachable_id: 'Id of the tagged record (see attachable_type).',
      attachable_type: 'Person, Company, Deal or Project.',
      name: 'Tag name.',
      api_input: 'True when created through the API.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.addresses': {
    table: 'Addresses of people and companies (include addrs).',
    columns: {
      id: "The address's id.",
      attachable_id: OF_CONTACT,
      attachable_type: CONTACT_TYPE,
      atype: 'Kind: work_hq, work, invoice, delivery, private or other.',
      primary:
        'True for the primary address. A reserved word: quote it ("primary"), or use is_primary in ' +
        'crm_live.addresses.',
      street: 'Street.',
      zip: 'Postcode.',
      city: 'City.',
      country_code: 'Country code, e.g. DE.',
      state_code: 'State code, e.g. SN.',
      country_name: 'Country name.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.contact_details': {
    table:
      'Phone numbers, e-mail addresses and homepages of people and companies (includes tels, emails, ' +
      'homepages).',
    columns: {
      id: "The contact detail's id.",
      type:
        'Tel (from tels), Email (emails) or Homepage (homepages), unless the item carries its own type ' +
        '(the CRM also knows Im and Sm).',
      attachable_id: OF_CONTACT,
      attachable_type: CONTACT_TYPE,
      atype: 'Kind; for phone numbers office, office_hq, mobile, fax, private, voip, skype or other.',
      name: 'The number, address or URL.',
      primary:
        'True for the primary one. A reserved word: quote it ("primary"), or use is_primary in ' +
        'crm_live.contact_details.',
      name_clean: 'Normalised form of name.',
      api_input: 'True when created through the API.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.positions': {
    table: 'Positions (jobs) of people at companies (include positions of people and companies).',
    columns: {
      id: "The position's id.",
      account_id: ACCOUNT,
      person_id: 'The person (crm.people).',
      company_id: 'The company (crm.companies).',
      company_name: 'Company name.',
      name: 'Job title.',
      department: 'Department.',
      primary_function: "True for the person's primary position.",
      former: 'True for a former position.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.custom_fields': {
    table: 'Values of custom fields of people, companies, deals and projects (include custom_fields).',
    columns: {
      id: "The custom field's id.",
      custom_fields_type_id: 'Its type (crm.custom_field_types).',
      attachable_id: 'Id of the record it belongs to (see attachable_type).',
      attachable_type: 'Person, Company, Deal or Project.',
      name: 'Field name.',
      value: 'Value, as text.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.connections': {
    table:
      'Connections of people and companies (include connections), one row per item at its place ' +
      '(_ordinal). Their shape is not shown upstream: every item is kept whole in _raw, whatever its ' +
      'shape; query its fields there.',
    columns: {
      id: "The connection's own id, when the item has a whole number under id (null otherwise).",
    },
  },
  'crm.historic_events': {
    table:
      'Historic events of people (birthdays and the like): in no include, read per person from the ' +
      "person's historic_events route by the details pass, one row per item at its place (_ordinal). " +
      "sync.record_details says when each person's were last read.",
    columns: {
      id: "The event's id.",
      unparsed_date: 'The date as the upstream holds it, unparsed (e.g. 1984-03-12, 12.03.1984 or 12.03.).',
      atype: 'Kind of event, e.g. birthday.',
      description: 'Description (upstream key desc, a reserved word in SQL).',
    },
  },
  'crm.assistants': {
    table:
      "Assistants of people (upstream assis): in no include, read per person from the person's assis " +
      'route by the details pass, one row per item at its place (_ordinal).',
    columns: {
      id: "The assistant's id.",
      name: "The assistant's name.",
      tel: "The assistant's phone number.",
      email: "The assistant's e-mail address.",
    },
  },
  'crm.deal_people': {
    table: 'The customer-side people of each deal (include people of deals).',
    columns: {
      deal_id: 'The deal (crm.deals), as _parent_id.',
      person_id: 'The person (crm.people; upstream key id).',
      first_name: "The person's first name.",
      name: "The person's last name.",
    },
  },
  'crm.project_people': {
    table: 'The customer-side people of each project (include people of projects).',
    columns: {
      project_id: 'The project (crm.projects), as _parent_id.',
      person_id: 'The person (crm.people; upstream key id).',
      first_name: "The person's first name.",
      name: "The person's last name.",
    },
  },
  'crm.note_links': {
    table:
      "What each note is linked to: one row per id of the note's person_ids, company_ids, deal_ids and " +
      'project_ids; _parent_id is the note (crm.notes).',
    columns: {
      attachable_type:
        'Person (from person_ids), Company (company_ids), Deal (deal_ids) or Project (project_ids).',
      attachable_id: 'Id of the linked record: the item of the array, as received.',
    },
  },
} satisfies { [C in CrmChild as C['table']]: TableText<C['columns']> }

/** crm.filter_group_members: its columns are fixed (see `MemberTable` in ../types.ts), but the group's. */
export const memberTexts = {
  table:
    'The members of each filter group (crm.filter_groups), one row per member record. Membership is a ' +
    'filter the upstream evaluates: a change that leaves the group count alone shows at the next full sweep.',
  group: 'The group (crm.filter_groups).',
  member_resource: "The member's table: crm.people, crm.companies, crm.deals or crm.projects.",
  member_id: "The member's id in that table.",
  _synced_at: 'When the row was first written.',
}
