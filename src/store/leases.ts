// Leases (sync.leases, migration 0026): work that one process of the deployment does at a time, held
// by a row rather than an advisory lock, so that the holder keeps no database connection while it
// waits on the upstream. The holder renews its lease while it works; a lease whose holder died is
// free again once `held_until` has passed.
import { sql } from 'kysely'
import type { Db } from './database.ts'

/** Takes `name` for `holder` for `ms`, or renews it if `holder` has it; false: another holds it. */
export async function takeLease(db: Db, name: string, holder: string, ms: number): Promise<boolean> {
  const { rows } = await sql<{ holder: string }>`
    insert into sync.leases as l (name, holder, held_until)
    values (${name}, ${holder}, clock_timestamp() + ${ms} * interval '1 millisecond')
    on conflict (name) do update set holder = excluded.holder, held_until = excluded.held_until
    where l.holder = excluded.holder or l.held_until <= clock_timestamp()
    returning l.holder
  `.execute(db)
  return rows.length > 0
}

/** Gives `name` back, if `holder` still has it. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await sql`delete from sync.leases where name = ${name} and holder = ${holder}`.execute(db)
}
