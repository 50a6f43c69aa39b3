// Engine state in schema sync: per-resource sync state, runs with per-resource progress, and the
// webhook inbox. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  // The migrator keeps its own tables in schema sync, so the schema may already exist.
  'create schema if not exists sync',

  `create table sync.resource_state (
    resource text primary key,
    watermark timestamptz,
    last_incremental_sync_at timestamptz,
    last_full_sync_at timestamptz,
    last_remote_count bigint,
    last_remote_count_at timestamptz,
    updated_at timestamptz not null default now()
  )`,

  `create table sync.runs (
    id bigint generated always as identity primary key,
    mode text not null check (mode in ('incremental', 'full')),
    status text not null check (status in ('queued', 'running', 'succeeded', 'failed')),
    requested_by text not null,
    created_at timestamptz not null default now(),
    started_at timestamptz,
    finished_at timestamptz,
    error text
  )`,
  'create index on sync.runs (created_at)',

  `create table sync.run_resources (
    run_id bigint not null references sync.runs (id) on delete cascade,
    resource text not null,
    status text not null check (status in ('queued', 'running', 'succeeded', 'failed')),
    records bigint not null default 0,
    pages integer not null default 0,
    remote_count bigint,
    api_requests integer not null default 0,
    checkpoint jsonb,
    started_at timestamptz,
    finished_at timestamptz,
    error text,
    primary key (run_id, resource)
  )`,
  // At most one unfinished sweep per resource, whichever replica asks: the second insert fails.
  `create unique index run_resources_one_active_per_resource on sync.run_resources (resource)
    where status in ('queued', 'running')`,

  `create table sync.inbox (
    id bigint generated always as identity primary key,
    received_at timestamptz not null default now(),
    model text,
    event text,
    shape text,
    record_id bigint,
    payload jsonb,
    body text,
    status text not null check (status in ('accepted', 'rejected', 'processed')),
    reason text,
    job_id text,
    processed_at timestamptz
  )`,
  'create index on sync.inbox (received_at)',
  `create index on sync.inbox (status, received_at) where status <> 'processed'`,
  'create index on sync.inbox (model, record_id)',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['inbox', 'run_resources', 'runs', 'resource_state']) {
    await sql.raw(`drop table sync.${table}`).execute(db)
  }
}
