// crm.activities: the CRM's activity log (GET /api/activities), a main table with the engine columns of
// every other; append-only upstream, so its rows are never tombstoned. sync.activity_feed: where the
// change feed (src/sync/feed) has read the log to, and which replica polls it. Both tables are new and
// empty here, so their indexes are built at once.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  `create table crm.activities (
    id bigint primary key,
    account_id bigint,
    user_id bigint,
    attachable_id bigint,
    attachable_type text,
    verb text,
    confidential boolean,
    change jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    _raw jsonb,
    _synced_at timestamptz not null default now(),
    _deleted_at timestamptz,
    _source text check (_source in ('fetch', 'payload')),
    _fetched_at timestamptz,
    _version bigint not null default 0
  )`,
  'create index on crm.activities (updated_at)',
  'create index on crm.activities (id) where _deleted_at is null',
  // A record's history, and reports by time.
  'create index on crm.activities (attachable_type, attachable_id)',
  'create index on crm.activities (created_at)',
  `create table sync.activity_feed (
    feed text primary key,
    newest_id bigint,
    newest_created_at timestamptz,
    polled_at timestamptz,
    lease_owner text,
    lease_until timestamptz,
    updated_at timestamptz not null default now()
  )`,
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sync.activity_feed`.execute(db)
  await sql`drop table crm.activities`.execute(db)
}
