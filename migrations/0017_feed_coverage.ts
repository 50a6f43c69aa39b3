// Since when the activity feed has read the log without a gap (its first poll, or the poll after a gap):
// an incremental sweep of a resource the log covers has nothing to read while the feed answers for
// every change since its watermark. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.activity_feed add column covered_since timestamptz`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.activity_feed drop column covered_since`.execute(db)
}
