// The request budget of the upstream services, shared by every replica on this database.
// A sliding window kept as slots: one row per request the window allows. A request takes a free slot
// and holds it until `window` after its answer arrived, so however slow the answers are, no window of
// that length sees more requests than there are slots. A 429 pauses the whole upstream.
// Frozen in time: this file must not import application code.
import { type Kysely, sql } from 'kysely'

const statements = [
  'create schema if not exists sync',

  `create table sync.upstream_budget (
    upstream text primary key,
    paused_until timestamptz
  )`,

  `create table sync.upstream_budget_slots (
    upstream text not null references sync.upstream_budget (upstream) on delete cascade,
    slot integer not null,
    free_at timestamptz not null,
    lease bigint not null default 0,
    primary key (upstream, slot)
  )`,
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['upstream_budget_slots', 'upstream_budget']) {
    await sql.raw(`drop table sync.${table}`).execute(db)
  }
}
