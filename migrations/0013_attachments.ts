// crm.attachments: the metadata of the CRM's attached files (GET /api/attachments), a main table with the
// engine columns of every other, keyed by the upstream's `uuid` (a text id). The files themselves (the
// Base64 `data` of a listing) are never stored. The table is new and empty here, so its indexes are
// built at once. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  `create table crm.attachments (
    id text primary key,
    account_id bigint,
    user_id bigint,
    attachable_id bigint,
    attachable_type text,
    content_type text,
    filename text,
    attachment_category_id bigint,
    created_at timestamptz,
    updated_at timestamptz,
    _raw jsonb,
    _synced_at timestamptz not null default now(),
    _deleted_at timestamptz,
    _source text check (_source in ('fetch', 'payload')),
    _fetched_at timestamptz,
    _version bigint not null default 0
  )`,
  'create index on crm.attachments (updated_at)',
  'create index on crm.attachments (id) where _deleted_at is null',
  // The attachments of a note or record, for reports.
  'create index on crm.attachments (attachable_type, attachable_id)',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table crm.attachments`.execute(db)
}
