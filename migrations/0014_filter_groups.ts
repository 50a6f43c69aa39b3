// crm.filter_groups: the CRM's saved filters (GET /api/filter_groups), a main table with the engine
// columns of every other. crm.filter_group_members: the records each group stands for, from the pages
// of GET /api/filter_groups/{id}; the group, the member's resource (`crm.people`) and its id are the
// key. sync.member_reads: per group, when its member pages were last read completely, and the group's
// element count and updated_at then (a group that changed since is read again). All three tables are
// new and empty here, so their indexes are built at once.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  `create table crm.filter_groups (
    id bigint primary key,
    account_id bigint,
    model_type text,
    name text,
    element_count integer,
    created_at timestamptz,
    updated_at timestamptz,
    _raw jsonb,
    _synced_at timestamptz not null default now(),
    _deleted_at timestamptz,
    _source text check (_source in ('fetch', 'payload')),
    _fetched_at timestamptz,
    _version bigint not null default 0
  )`,
  'create index on crm.filter_groups (updated_at)',
  'create index on crm.filter_groups (id) where _deleted_at is null',
  `create table crm.filter_group_members (
    filter_group_id bigint not null,
    member_resource text not null,
    member_id bigint not null,
    _synced_at timestamptz not null default now(),
    primary key (filter_group_id, member_resource, member_id)
  )`,
  // The groups a record is in.
  'create index on crm.filter_group_members (member_resource, member_id)',
  `create table sync.member_reads (
    resource text not null,
    group_id bigint not null,
    element_count integer,
    updated_at timestamptz,
    members integer not null,
    read_at timestamptz not null default now(),
    primary key (resource, group_id)
  )`,
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sync.member_reads`.execute(db)
  await sql`drop table crm.filter_group_members`.execute(db)
  await sql`drop table crm.filter_groups`.execute(db)
}
