// The inbox becomes the queue of deliveries (the receiver's one insert is the whole of its durable
// work), and every main table learns when the upstream was last asked for the row, so that a refresh
// that a fetch already answered is skipped.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const MAIN_TABLES = [
  'crm.people',
  'crm.companies',
  'crm.deals',
  'crm.projects',
  'crm.tasks',
  'crm.users',
  'reservations.contacts',
  'reservations.bookings',
]

const statements = [
  // When the request was sent whose answer (show or page) last wrote the row: every change the
  // upstream made before then is in the row, or was superseded by a later one.
  ...MAIN_TABLES.map((table) => `alter table ${table} add column _fetched_at timestamptz`),

  // A delivery that cannot be applied is retried with backoff, and after too many attempts kept
  // as `failed` with its error, for inspection and a replay.
  'alter table sync.inbox add column attempts integer not null default 0',
  'alter table sync.inbox add column available_at timestamptz',
  'alter table sync.inbox add column error text',
  'alter table sync.inbox drop constraint inbox_status_check',
  `alter table sync.inbox add constraint inbox_status_check
    check (status in ('accepted', 'rejected', 'processed', 'failed'))`,
  // The queue: deliveries waiting to be applied, oldest first.
  `create index inbox_pending on sync.inbox (id) where status = 'accepted'`,
  // The latest delivery of a record, which a refresh must have asked the upstream after.
  'create index inbox_record_latest on sync.inbox (model, record_id, received_at)',
  'drop index sync.inbox_model_record_id_idx',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const reverse = [
    'create index on sync.inbox (model, record_id)',
    'drop index sync.inbox_record_latest',
    'drop index sync.inbox_pending',
    `update sync.inbox set status = 'accepted' where status = 'failed'`,
    'alter table sync.inbox drop constraint inbox_status_check',
    `alter table sync.inbox add constraint inbox_status_check check (status in ('accepted', 'rejected', 'processed'))`,
    'alter table sync.inbox drop column error',
    'alter table sync.inbox drop column available_at',
    'alter table sync.inbox drop column attempts',
    ...MAIN_TABLES.map((table) => `alter table ${table} drop column _fetched_at`),
  ]
  for (const statement of reverse) {
    await sql.raw(statement).execute(db)
  }
}
