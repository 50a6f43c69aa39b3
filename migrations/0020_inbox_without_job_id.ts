// sync.inbox.job_id named the pg-boss job of a delivery before the inbox became the queue (0005);
// nothing has written it since. Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox drop column job_id`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sync.inbox add column job_id text`.execute(db)
}
