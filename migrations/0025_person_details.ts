// A person's historic events and assistants, which no include carries: the details pass reads them per
// person (`people/{id}/historic_events`, `people/{id}/assis`).
// - crm.historic_events and crm.assistants: child tables with the engine columns of every other, keyed
//   like them by the item's place. The upstream's `desc` is `description` (a reserved word in SQL).
// - sync.record_details: per record, when its details were last read (`read_at`, the time the first of
//   its requests was granted; null before a read succeeded) and the record's `updated_at` then
//   (`read_for`). A record whose `updated_at` has moved since, or that was read before the last full
//   run of its resource began, is read again; one without a read has never been read. A read that
//   failed is tried again after `retry_at`, later with each of its `failures` in a row.
// Every table is new and empty, so its key is built at once.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

/** The child tables this migration creates, with their key (0018 keyed those before). */
export const CHILD_TABLES = ['crm.historic_events', 'crm.assistants']

const engineColumns = `_parent_resource text not null,
    _parent_id bigint not null,
    _ordinal integer not null`
const tail = `_raw jsonb not null,
    _synced_at timestamptz not null default now()`

const statements = [
  `create table crm.historic_events (
    ${engineColumns},
    id bigint,
    unparsed_date text,
    atype text,
    description text,
    ${tail},
    constraint historic_events_pkey primary key (_parent_resource, _parent_id, _ordinal)
  )`,
  `create table crm.assistants (
    ${engineColumns},
    id bigint,
    name text,
    tel text,
    email text,
    ${tail},
    constraint assistants_pkey primary key (_parent_resource, _parent_id, _ordinal)
  )`,
  `create table sync.record_details (
    resource text not null,
    record_id bigint not null,
    read_at timestamptz,
    read_for timestamptz,
    failures integer not null default 0,
    retry_at timestamptz,
    primary key (resource, record_id)
  )`,
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sync.record_details`.execute(db)
  await sql`drop table crm.assistants`.execute(db)
  await sql`drop table crm.historic_events`.execute(db)
}
