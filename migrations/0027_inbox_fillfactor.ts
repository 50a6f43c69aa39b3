// sync.inbox keeps half of each page free (fillfactor 50). A delivery's row is about 2 KB and the
// processed mark updates it: with the page full, the new version went to another page and the whole
// row was written to the WAL again (1.9 KB); beside the old one, PostgreSQL logs only what changed
// (about 0.4 KB). Pages already written keep what they have. docs/performance.md, "Ingest".
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox set (fillfactor = 50)`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox reset (fillfactor)`.execute(db)
}
