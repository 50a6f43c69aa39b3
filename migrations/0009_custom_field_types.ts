// crm.custom_field_types: the CRM's custom field types (GET /api/custom_fields_types), a main table
// with the engine columns of every other. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`set local lock_timeout = '10s'`.execute(db)
  await sql`
    create table crm.custom_field_types (
      id bigint primary key,
      position integer,
      category text,
      name text,
      created_at timestamptz,
      updated_at timestamptz,
      _raw jsonb,
      _synced_at timestamptz not null default now(),
      _deleted_at timestamptz,
      _source text check (_source in ('fetch', 'payload')),
      _fetched_at timestamptz,
      _version bigint not null default 0
    )
  `.execute(db)
  await sql`create index on crm.custom_field_types (updated_at)`.execute(db)
  await sql`create index on crm.custom_field_types (id) where _deleted_at is null`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table crm.custom_field_types`.execute(db)
}
