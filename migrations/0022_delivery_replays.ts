// Replays of every rejected or failed delivery since a time, asked on the status page and worked by a
// job of the queue `delivery-replay` (src/sync/delivery/replay-all.ts): what it covers, how far it has
// come (`cursor`, the last inbox id handled), and whether it runs, was cancelled or finished.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table sync.delivery_replays (
      id bigint generated always as identity primary key,
      since timestamptz not null,
      statuses text[] not null
        check (cardinality(statuses) > 0 and statuses <@ array['rejected', 'failed']::text[]),
      requested_at timestamptz not null default now(),
      state text not null default 'running' check (state in ('running', 'cancelled', 'finished')),
      total integer not null,
      done integer not null default 0,
      cursor bigint not null default 0,
      finished_at timestamptz
    )
  `.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table sync.delivery_replays`.execute(db)
}
