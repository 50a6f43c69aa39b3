// sync.leases: a named piece of work that one process of the deployment does at a time (the hook
// registration of an account), held by `holder` until `held_until`. A lease is a row, not an advisory
// lock, so that its holder keeps no database connection while it waits on the upstream; one whose
// holder died is free again once `held_until` has passed.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table sync.leases (
      name text primary key,
      holder text not null,
      held_until timestamptz not null
    )
  `.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sync.leases`.execute(db)
}
