// crm.notes: the CRM's notes ("protocols", GET /api/protocols), a main table with the engine columns of
// every other; crm.note_links: what each note is linked to (one row per id of its `person_ids`,
// `company_ids`, `deal_ids` and `project_ids`), a child table with the engine columns of every other.
// Both tables are new and empty here, so their indexes are built at once.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  `create table crm.notes (
    id bigint primary key,
    account_id bigint,
    user_id bigint,
    name text,
    content text,
    format text,
    confidential boolean,
    badge text,
    type text,
    attachments_count integer,
    comments_count integer,
    updated_by_user_id bigint,
    person_id bigint,
    company_id bigint,
    created_at timestamptz,
    updated_at timestamptz,
    _raw jsonb,
    _synced_at timestamptz not null default now(),
    _deleted_at timestamptz,
    _source text check (_source in ('fetch', 'payload')),
    _fetched_at timestamptz,
    _version bigint not null default 0
  )`,
  'create index on crm.notes (updated_at)',
  'create index on crm.notes (id) where _deleted_at is null',
  'create index on crm.notes (person_id)',
  'create index on crm.notes (company_id)',
  `create table crm.note_links (
    _parent_resource text not null,
    _parent_id bigint not null,
    _ordinal integer not null,
    attachable_type text,
    attachable_id bigint,
    _raw jsonb not null,
    _synced_at timestamptz not null default now()
  )`,
  'create index on crm.note_links (_parent_resource, _parent_id)',
  // A deleted person's, company's, deal's or project's notes (the silent cascade), and reports.
  'create index on crm.note_links (attachable_type, attachable_id)',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table crm.note_links`.execute(db)
  await sql`drop table crm.notes`.execute(db)
}
