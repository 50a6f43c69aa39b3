// sync.activity_feed.log_written_since: since when the feed has written every entry of the log it read
// to crm.activities (null: it has not, or does not, mirror the log). `covered_since` says since when it
// has read the log without a gap, which answers for the resources it names; whether the entries
// themselves are mirrored is this column's. An incremental walk of the log may stop at a page the
// mirror holds whole only behind it (src/sync/plan/sweep.ts).
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.activity_feed add column log_written_since timestamptz`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.activity_feed drop column log_written_since`.execute(db)
}
