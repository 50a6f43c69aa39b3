// The most records one index page of a resource has held: the upstream caps pages at no less, so a list
// of at most that many live rows is shown whole by its first page (sync/sweep/short-list.ts). Frozen in
// time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.resource_state add column largest_page integer`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.resource_state drop column largest_page`.execute(db)
}
