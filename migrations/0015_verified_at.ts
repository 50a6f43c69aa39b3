// When the last complete walk of a resource (and its reconciliation) ended. The next verification is
// due a period after it: counted from the walk's start, a walk that took minutes under a shared budget
// made the next one due at once. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.resource_state add column last_verified_at timestamptz`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.resource_state drop column last_verified_at`.execute(db)
}
