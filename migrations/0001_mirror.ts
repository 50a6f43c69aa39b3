// The mirror: schemas crm and reservations, one table per upstream resource, child tables from
// includes. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const main = (table: string, columns: string) => `
  create table ${table} (
    id bigint primary key,
    ${columns},
    _raw jsonb,
    _synced_at timestamptz not null default now(),
    _deleted_at timestamptz,
    _source text check (_source in ('fetch', 'payload'))
  )`

const child = (table: string, columns: string) => [
  `create table ${table} (
    _parent_resource text not null,
    _parent_id bigint not null,
    _ordinal integer not null,
    ${columns},
    _raw jsonb not null,
    _synced_at timestamptz not null default now()
  )`,
  `create index on ${table} (_parent_resource, _parent_id)`,
]

const statements = [
  'create schema crm',
  'create schema reservations',

  main(
    'crm.people',
    `
    account_id bigint, salutation text, title text, gender text, country_code text, first_name text,
    name text, background text, user_id bigint, created_at timestamptz, updated_at timestamptz,
    created_by_user_id bigint, updated_by_user_id bigint, responsible_user_natural_name text,
    salutation_official text, salutation_formal text, salutation_informal text, "user" jsonb`,
  ),
  main(
    'crm.companies',
    `
    account_id bigint, name text, background text, created_at timestamptz, updated_at timestamptz,
    user_id bigint, created_by_user_id bigint, is_own boolean, demo boolean, import_log_id bigint`,
  ),
  main(
    'crm.deals',
    `
    account_id bigint, user_id bigint, company_id bigint, name text, description text, value numeric,
    value_type text, value_count numeric, currency text, target_date date, finished_at timestamptz,
    current_state text, created_at timestamptz, updated_at timestamptz, person_ids_set text`,
  ),
  main(
    'crm.projects',
    `
    account_id bigint, user_id bigint, company_id bigint, name text, description text, target_date date,
    finished_at timestamptz, current_state text, created_at timestamptz, updated_at timestamptz,
    person_ids_set text`,
  ),
  main(
    'crm.tasks',
    `
    account_id bigint, attachable_id bigint, attachable_type text, badge text, finished boolean, name text,
    precise_time timestamptz, user_id bigint, created_by_user_id bigint, updated_by_user_id bigint,
    created_at timestamptz, updated_at timestamptz, comments_count integer, end_time timestamptz,
    fuzzy boolean, entire_day boolean`,
  ),
  main('crm.users', 'first text, name text, login text'),
  main(
    'reservations.contacts',
    `
    account_id bigint, title text, first text, last text, note text, phone text, phone2 text, mail text,
    company text, street text, zip text, city text, newsletter text, created_at timestamptz,
    updated_at timestamptz, completed_bookings_count integer, phone_clean text, phone2_clean text,
    newsletter_double_opt_in_hash text, import_id text, deleted_at timestamptz`,
  ),
  main(
    'reservations.bookings',
    `
    account_id bigint, type text, group_id bigint, area_id bigint, contact_id bigint, date date,
    hour integer, minute integer, number_guests integer, note text, duration integer,
    created_by_user_id bigint, company text, mail_confirmation boolean, status text, webform boolean,
    created_at timestamptz, updated_at timestamptz`,
  ),

  ...child(
    'crm.tags',
    `
    id bigint, account_id bigint, attachable_id bigint, attachable_type text, name text, api_input boolean,
    created_at timestamptz, updated_at timestamptz`,
  ),
  ...child(
    'crm.addresses',
    `
    id bigint, attachable_id bigint, attachable_type text, atype text, "primary" boolean, street text,
    zip text, city text, country_code text, state_code text, country_name text, created_at timestamptz,
    updated_at timestamptz`,
  ),
  ...child(
    'crm.contact_details',
    `
    id bigint, type text, attachable_id bigint, attachable_type text, atype text, name text,
    "primary" boolean, name_clean text, api_input boolean, created_at timestamptz, updated_at timestamptz`,
  ),
  ...child(
    'crm.positions',
    `
    id bigint, account_id bigint, person_id bigint, company_id bigint, company_name text, name text,
    department text, primary_function boolean, former boolean, created_at timestamptz, updated_at timestamptz`,
  ),
  ...child(
    'crm.custom_fields',
    `
    id bigint, custom_fields_type_id bigint, attachable_id bigint, attachable_type text, name text,
    value text, created_at timestamptz, updated_at timestamptz`,
  ),
  ...child('crm.deal_people', 'deal_id bigint, person_id bigint, first_name text, name text'),
  ...child('crm.project_people', 'project_id bigint, person_id bigint, first_name text, name text'),

  // Reporting: recent changes, live rows, and the foreign keys reports join on.
  ...[
    'crm.people',
    'crm.companies',
    'crm.deals',
    'crm.projects',
    'crm.tasks',
    'reservations.contacts',
    'reservations.bookings',
  ].flatMap((table) => [
    `create index on ${table} (updated_at)`,
    `create index on ${table} (id) where _deleted_at is null`,
  ]),
  'create index on crm.users (id) where _deleted_at is null',
  'create index on crm.people (user_id)',
  'create index on crm.companies (user_id)',
  'create index on crm.deals (company_id)',
  'create index on crm.deals (user_id)',
  'create index on crm.projects (company_id)',
  'create index on crm.tasks (attachable_type, attachable_id)',
  'create index on crm.tasks (user_id)',
  'create index on reservations.bookings (contact_id)',
  'create index on reservations.bookings (date)',
  'create index on crm.tags (name)',
  'create index on crm.tags (attachable_type, attachable_id)',
  'create index on crm.addresses (attachable_type, attachable_id)',
  'create index on crm.contact_details (attachable_type, attachable_id)',
  'create index on crm.positions (person_id)',
  'create index on crm.positions (company_id)',
  'create index on crm.custom_fields (attachable_type, attachable_id)',
  'create index on crm.deal_people (person_id)',
  'create index on crm.project_people (person_id)',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop schema reservations cascade`.execute(db)
  await sql`drop schema crm cascade`.execute(db)
}
