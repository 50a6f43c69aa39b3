// The reservation service's tags and webforms (GET /api/tags, GET /api/webforms), main tables with the
// engine columns of every other, and each contact's tags (`include_tags=true`), a child table of
// reservations.contacts. Contacts mirrored before this version get their tag rows when a complete walk
// of the contacts writes them again with their tags. Frozen in time: this file must not import
// application code.
import { type Kysely, sql } from 'kysely'

const ENGINE_COLUMNS = `
  _raw jsonb,
  _synced_at timestamptz not null default now(),
  _deleted_at timestamptz,
  _source text check (_source in ('fetch', 'payload')),
  _fetched_at timestamptz,
  _version bigint not null default 0`

const statements = [
  `create table reservations.tags (
    id bigint primary key,
    name text,
    created_at timestamptz,
    updated_at timestamptz,
    ${ENGINE_COLUMNS}
  )`,
  'create index on reservations.tags (updated_at)',
  'create index on reservations.tags (id) where _deleted_at is null',
  `create table reservations.webforms (
    id bigint primary key,
    name text,
    ${ENGINE_COLUMNS}
  )`,
  'create index on reservations.webforms (id) where _deleted_at is null',
  `create table reservations.contact_tags (
    _parent_resource text not null,
    _parent_id bigint not null,
    _ordinal integer not null,
    id bigint,
    name text,
    _raw jsonb not null,
    _synced_at timestamptz not null default now()
  )`,
  'create index on reservations.contact_tags (_parent_resource, _parent_id)',
  'create index on reservations.contact_tags (id)',
]

export async function up(db: Kysely<any>): Promise<void> {
  await sql`set local lock_timeout = '10s'`.execute(db)
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['reservations.contact_tags', 'reservations.webforms', 'reservations.tags']) {
    await sql.raw(`drop table ${table}`).execute(db)
  }
}
