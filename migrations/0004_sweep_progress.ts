// What a resource sweep needs beyond 0002: which attempt owns it (a retried job takes it over, and the
// attempt it replaced must stop writing), when it last showed progress (a sweep whose job was lost
// is abandoned rather than blocking its resource forever), and what reconciliation did.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  'alter table sync.run_resources add column lease text',
  'alter table sync.run_resources add column progress_at timestamptz not null default now()',
  'alter table sync.run_resources add column reconciled integer not null default 0',
  'alter table sync.run_resources add column tombstoned integer not null default 0',
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['tombstoned', 'reconciled', 'progress_at', 'lease']) {
    await sql.raw(`alter table sync.run_resources drop column ${column}`).execute(db)
  }
}
