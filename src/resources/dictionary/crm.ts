// The data dictionary of the CRM's main tables: what each table and column holds, from the vendor's API
// document and what is known of the real service (docs/upstream.md).
import type { crmResources } from '../crm.ts'
import type { TableText } from './types.ts'

type CrmResource = (typeof crmResources)[number]

const ACCOUNT = 'The CRM account.'
const CREATED = 'When the record was created upstream.'
const UPDATED = 'When the record was last changed upstream.'
const ATTACHABLE_TYPES = 'Person, Company, Deal or Project'

export const crmTableTexts = {
  'crm.people': {
    table:
      'People (contacts) of the CRM, one row per person ever mirrored. Sub-objects: crm.tags, ' +
      'crm.addresses, crm.contact_details, crm.positions, crm.custom_fields, crm.connections; the avatar ' +
      'in column avatar; crm.historic_events and crm.assistants, read per person. Webhooks: model person.',
    columns: {
      id: "The person's id in the CRM.",
      account_id: ACCOUNT,
      salutation: 'Form of address.',
      title: 'Title, e.g. Dr.',
      gender:
        'gender_unknown, male_user, female_user, male_auto, female_auto, family_user or family_auto ' +
        '(*_auto: derived from the first name); older answers give an integer, stored as its text.',
      country_code: 'Language as an ISO 639-1 code, used to generate salutations.',
      first_name: 'First name.',
      name: 'Last name.',
      background: 'Background notes.',
      user_id: 'The user the person belongs to (crm.users).',
      created_at: CREATED,
      updated_at: UPDATED,
      created_by_user_id: 'The user who created it (crm.users).',
      updated_by_user_id: 'The user who last changed it (crm.users).',
      responsible_user_natural_name: 'Full name of the responsible user, when the upstream returns it.',
      salutation_official: 'Generated official salutation, when returned.',
      salutation_formal: 'Generated formal salutation, when returned.',
      salutation_informal: 'Generated informal salutation, when returned.',
      user:
        'The responsible user as an object (id, first, name, login), when returned. A reserved word: ' +
        'quote it ("user"), or use responsible_user in crm_live.people.',
      avatar:
        'The include avatar: the picture as the upstream sends it (one object, its fields not shown), ' +
        'kept whole; null when the record has none.',
    },
  },
  'crm.companies': {
    table:
      'Companies (organisations) of the CRM. Sub-objects as people: crm.tags, crm.addresses, ' +
      'crm.contact_details, crm.positions, crm.custom_fields, crm.connections; the avatar in column ' +
      'avatar. Webhooks: model company.',
    columns: {
      id: "The company's id in the CRM.",
      account_id: ACCOUNT,
      name: 'Company name.',
      background: 'Background notes.',
      created_at: CREATED,
      updated_at: UPDATED,
      user_id: 'The responsible user (crm.users).',
      created_by_user_id: 'The user who created it (crm.users).',
      is_own: "True for the account's own company.",
      demo: 'True for a demo record.',
      import_log_id: 'The import it came from.',
      avatar:
        'The include avatar: the picture as the upstream sends it (one object, its fields not shown), ' +
        'kept whole; null when the record has none.',
    },
  },
  'crm.deals': {
    table:
      'Deals (offers with a monetary value). Sub-objects: crm.tags, crm.deal_people (its customer-side ' +
      'people), crm.custom_fields. Webhooks: model deal.',
    columns: {
      id: "The deal's id in the CRM.",
      account_id: ACCOUNT,
      user_id: 'The responsible user (crm.users).',
      company_id: 'The related company (crm.companies).',
      name: 'Deal name.',
      description: 'Description.',
      value: 'Value, in currency (a decimal string upstream); the total is value times value_count.',
      value_type: 'Total, Monatlich (monthly), Tagessatz (daily rate) or Stundensatz (hourly rate).',
      value_count: 'Quantity, relevant when value_type is not Total (a decimal string upstream).',
      currency: 'Currency code (default EUR).',
      target_date: 'Target date.',
      finished_at: 'When the state became won or lost.',
      current_state: 'open_0, open_25, open_50, open_75 (open, with its chance in percent), won or lost.',
      created_at: CREATED,
      updated_at: UPDATED,
      person_ids_set: 'Write-only upstream: null unless returned (the people are in crm.deal_people).',
    },
  },
  'crm.projects': {
    table:
      'Projects. Sub-objects: crm.tags, crm.project_people (its customer-side people), crm.custom_fields. ' +
      'Webhooks: model project.',
    columns: {
      id: "The project's id in the CRM.",
      account_id: ACCOUNT,
      user_id: 'The responsible user (crm.users).',
      company_id: 'The related company (crm.companies).',
      name: 'Project name.',
      description: 'Description.',
      target_date: 'Target date.',
      finished_at: 'When the state became closed.',
      current_state: 'ready, open or closed.',
      created_at: CREATED,
      updated_at: UPDATED,
      person_ids_set: 'Write-only upstream: null unless returned (the people are in crm.project_people).',
    },
  },
  'crm.tasks': {
    table:
      'Tasks, each linked to a person, company, deal or project. No webhooks: changes come from sweeps; ' +
      'deleted with the record they are linked to.',
    columns: {
      id: "The task's id in the CRM.",
      account_id: ACCOUNT,
      attachable_id: 'Id of the linked person, company, deal or project (see attachable_type).',
      attachable_type: `What it is linked to: ${ATTACHABLE_TYPES}.`,
      badge: 'task, call, meeting, email, preparation or other.',
      finished: 'True when done, false while open.',
      name: 'Text of the task.',
      precise_time: 'Due time.',
      user_id: 'The responsible user (crm.users).',
      created_by_user_id: 'The user who created it (crm.users).',
      updated_by_user_id: 'The user who last changed it (crm.users).',
      created_at: CREATED,
      updated_at: UPDATED,
      comments_count: 'Number of comments.',
      end_time: 'End time.',
      fuzzy: 'True when the due time is vague.',
      entire_day: 'True for an all-day task.',
    },
  },
  'crm.users': {
    table:
      "The CRM's users (index only: a user missing from a complete read is marked deleted). Referenced " +
      'by the user_id columns.',
    columns: {
      id: "The user's id in the CRM.",
      first: 'First name.',
      name: 'Last name.',
      login: 'E-mail address and login.',
    },
  },
  'crm.custom_field_types': {
    table:
      'The types of the custom fields of people, companies, deals and projects; their values are rows ' +
      'of crm.custom_fields.',
    columns: {
      id: "The type's id in the CRM (crm.custom_fields.custom_fields_type_id).",
      position: "Position in the CRM's forms.",
      category: 'The model the type belongs to: Person, Company, Deal or Project.',
      name: 'Name of the field.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.notes': {
    table:
      "The CRM's notes (protocols). What each is linked to: crm.note_links. No webhooks: changes come " +
      'from sweeps; deleted with a record they are linked to.',
    columns: {
      id: "The note's id in the CRM.",
      account_id: ACCOUNT,
      user_id: "The note's user (crm.users).",
      name: 'Title.',
      content: 'Text of the note, in format.',
      format: 'plaintext, markdown, textile or html.',
      confidential: 'True when marked confidential.',
      badge: 'Kind, e.g. note, call, email, meeting, other.',
      type: 'ProtocolObjectNote, ProtocolUserNote or ProtocolAttachment (others may come).',
      attachments_count: 'Number of attachments (crm.attachments).',
      comments_count: 'Number of comments.',
      updated_by_user_id: 'The user who last changed it (crm.users).',
      person_id: 'A linked person, as the upstream names one (all links: crm.note_links).',
      company_id: 'A linked company, as the upstream names one (all links: crm.note_links).',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.activities': {
    table:
      "The CRM's activity log: an entry for every create, update and destroy, written by the upstream. " +
      'Append-only: never marked deleted.',
    columns: {
      id: "The activity's id in the CRM.",
      account_id: ACCOUNT,
      user_id: 'Who made the change (crm.users).',
      attachable_id: 'Id of the record that changed (see attachable_type).',
      attachable_type: `What changed: ${ATTACHABLE_TYPES}, Task, or a note (Protocol...).`,
      verb: 'create, update or destroy (others may come).',
      confidential: 'True when marked confidential.',
      change:
        'What changed, kept whole whatever its shape, e.g. ' +
        '{"person": {"changes": {"name": ["old", "new"]}}}; seen elsewhere at change.changes, at a ' +
        'top-level changes, or under sibling keys such as task or protocol.',
      created_at: 'When it happened.',
      updated_at: 'As created_at (activities are not changed).',
    },
  },
  'crm.attachments': {
    table:
      'Metadata of the files attached to notes and records (the file itself is never stored: fetch it ' +
      'from the CRM). Index only: an attachment missing from a complete read is marked deleted.',
    columns: {
      id: "The attachment's uuid (upstream key uuid): a text primary key.",
      account_id: ACCOUNT,
      user_id: 'The user who attached it (crm.users).',
      attachable_id: 'Id of what it is attached to (see attachable_type).',
      attachable_type: `What it is attached to: a note (Protocol...), ${ATTACHABLE_TYPES}.`,
      content_type: 'MIME type, e.g. application/pdf.',
      filename: "The file's name.",
      attachment_category_id: 'Its category, if any.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
  'crm.filter_groups': {
    table:
      "The CRM's saved filters (filter groups); their members are in crm.filter_group_members. A group " +
      'missing from a complete read is marked deleted.',
    columns: {
      id: "The group's id in the CRM.",
      account_id: ACCOUNT,
      model_type:
        'The model type of its members, as the upstream names it: person, company, deal or project ' +
        '(or Person, ...).',
      name: 'Name of the group.',
      element_count: 'Its number of members, as the upstream counts them.',
      created_at: CREATED,
      updated_at: UPDATED,
    },
  },
} satisfies { [R in CrmResource as R['name']]: TableText<R['columns']> }
