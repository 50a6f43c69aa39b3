// The request headers of each delivery, for the status page's delivery view: names in lower case,
// values that may carry a secret masked (src/receiver/headers.ts). Null for deliveries kept before.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox add column headers jsonb`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox drop column headers`.execute(db)
}
