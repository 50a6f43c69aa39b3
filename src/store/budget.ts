// The upstream request budget shared by every replica (tables in migrations/0003_upstream_budget.ts).
// Each function is one statement, so concurrent replicas never hand out the same slot twice
// (`for update skip locked` makes a second taker pass over a row the first one is taking).
// Time is PostgreSQL's clock, the one clock all replicas share; `at` replaces it in tests.
import { sql } from 'kysely'
import type { Db } from './database.ts'

/** A slot held by one request; `lease` tells this holding apart from later ones of the same slot. */
export interface BudgetLease {
  slot: number
  lease: number
  /**
   * PostgreSQL's time when the slot was granted. The request leaves after it, so an answer reflects
   * every change the upstream made before then: the time a fetched record is compared with, on the
   * clock the inbox's `received_at` and the tombstones also use.
   */
  grantedAt: Date
}

export type SlotTake = ({ granted: true } & BudgetLease) | { granted: false; waitMs: number }

const clock = (at: Date | null) => sql`coalesce(${at}::timestamptz, clock_timestamp())`
const milliseconds = (ms: number) => sql`(${ms}::float8 * interval '1 millisecond')`

/** Creates the budget of an upstream with `slots` requests per window (idempotent; a changed size applies). */
export async function prepareBudget(db: Db, upstream: string, slots: number): Promise<void> {
  await sql`
    with budget as (
      insert into sync.upstream_budget (upstream) values (${upstream}) on conflict do nothing
    ),
    added as (
      insert into sync.upstream_budget_slots (upstream, slot, free_at)
      select ${upstream}, slot, '-infinity' from generate_series(0, ${slots}::int - 1) slot
      on conflict do nothing
    )
    delete from sync.upstream_budget_slots where upstream = ${upstream} and slot >= ${slots}::int
  `.execute(db)
}

/**
 * Takes a free slot and holds it for `holdMs` (until the request's answer releases it), or says
 * how long until the budget may have one: the earliest slot's time, or the end of a pause.
 */
export async function takeBudgetSlot(
  db: Db,
  upstream: string,
  options: { holdMs: number; at: Date | null },
): Promise<SlotTake> {
  const result = await sql<{ slot: number | null; lease: number | null; granted_at: Date; wait_ms: number }>`
    with clock as (select ${clock(options.at)} as now),
    pause as (
      select b.paused_until from sync.upstream_budget b, clock
      where b.upstream = ${upstream} and b.paused_until > clock.now
    ),
    free as (
      select s.slot from sync.upstream_budget_slots s, clock
      where s.upstream = ${upstream} and s.free_at <= clock.now and not exists (select from pause)
      order by s.free_at, s.slot
      limit 1
      for update of s skip locked
    ),
    taken as (
      update sync.upstream_budget_slots s
      set free_at = clock.now + ${milliseconds(options.holdMs)}, lease = s.lease + 1
      from free, clock
      where s.upstream = ${upstream} and s.slot = free.slot
      returning s.slot, s.lease
    )
    select taken.slot, taken.lease, clock.now as granted_at,
      (extract(epoch from greatest(
        (select paused_until from pause),
        (select min(free_at) from sync.upstream_budget_slots where upstream = ${upstream}),
        clock.now
      ) - clock.now) * 1000)::float8 as wait_ms
    from clock left join taken on true
  `.execute(db)
  const row = result.rows[0]
  if (row?.slot != null && row.lease != null) {
    return { granted: true, slot: row.slot, lease: row.lease, grantedAt: new Date(row.granted_at) }
  }
  return { granted: false, waitMs: row?.wait_ms ?? 0 }
}

/** Frees the slot `windowMs` after now (the answer has arrived), unless it was taken again since. */
export async function releaseBudgetSlot(
  db: Db,
  upstream: string,
  lease: BudgetLease,
  options: { windowMs: number; at: Date | null },
): Promise<void> {
  await sql`
    update sync.upstream_budget_slots
    set free_at = ${clock(options.at)} + ${milliseconds(options.windowMs)}
    where upstream = ${upstream} and slot = ${lease.slot} and lease = ${lease.lease}
  `.execute(db)
}

/** Stops every replica from sending to the upstream for `ms` (a pause never shortens an earlier one). */
export async function pauseBudget(
  db: Db,
  upstream: string,
  options: { ms: number; at: Date | null },
): Promise<void> {
  await sql`
    insert into sync.upstream_budget (upstream, paused_until)
    values (${upstream}, ${clock(options.at)} + ${milliseconds(options.ms)})
    on conflict (upstream) do update
    set paused_until = greatest(sync.upstream_budget.paused_until, excluded.paused_until)
  `.execute(db)
}

/**
 * After a 429 while the budget was nearly all in use (80% of its slots busy within the window), the
 * upstream's real limit is taken to be lower: the budget narrows to 80% of its size, never below
 * `floor`. Nothing narrows while the upstream is paused (the other answers of the same burst), nor on
 * a 429 that came while the budget was mostly free (a fault, not a limit). Returns the new size, or
 * null when it stayed as it was.
 */
export async function narrowBudget(
  db: Db,
  upstream: string,
  options: { floor: number; at: Date | null },
): Promise<number | null> {
  const result = await sql<{ size: number }>`
    with clock as (select ${clock(options.at)} as now),
    size as (
      select count(*)::int as slots, count(*) filter (where s.free_at > clock.now)::int as busy
      from sync.upstream_budget_slots s, clock where s.upstream = ${upstream}
    ),
    target as (
      select greatest(${options.floor}::int, floor(slots * 0.8)::int) as size from size, clock
      where busy >= ceil(slots * 0.8) and slots > ${options.floor}::int
        and not exists (
          select from sync.upstream_budget b
          where b.upstream = ${upstream} and b.paused_until > clock.now
        )
    ),
    cut as (
      delete from sync.upstream_budget_slots s using target
      where s.upstream = ${upstream} and s.slot >= target.size
      returning s.slot
    )
    select size from target where exists (select from cut)
  `.execute(db)
  return result.rows[0]?.size ?? null
}

/**
 * Widens a narrowed budget by one slot, up to `size`, when the upstream has not paused it (a 429) for
 * `quietMs`. Returns the new size, or null when it stayed as it was.
 */
export async function widenBudget(
  db: Db,
  upstream: string,
  options: { size: number; quietMs: number; at: Date | null },
): Promise<number | null> {
  const result = await sql<{ slot: number }>`
    insert into sync.upstream_budget_slots (upstream, slot, free_at)
    select ${upstream}, count(*)::int, '-infinity' from sync.upstream_budget_slots
    where upstream = ${upstream}
    having count(*) < ${options.size}::int and not exists (
      select from sync.upstream_budget
      where upstream = ${upstream} and paused_until > ${clock(options.at)} - ${milliseconds(options.quietMs)}
    )
    on conflict do nothing
    returning slot
  `.execute(db)
  const slot = result.rows[0]?.slot
  return slot === undefined ? null : slot + 1
}

/**
 * The share of the budget's slots free now: 0 while the upstream has paused it (a 429), 1 before the
 * budget's first request has made its slots.
 */
export async function freeBudgetShare(db: Db, upstream: string): Promise<number> {
  const result = await sql<{ share: number }>`
    select case
      when exists (
        select from sync.upstream_budget b where b.upstream = ${upstream} and b.paused_until > now()
      ) then 0
      else coalesce((count(*) filter (where s.free_at <= now()))::float8 / nullif(count(*), 0), 1)
    end as share
    from sync.upstream_budget_slots s where s.upstream = ${upstream}
  `.execute(db)
  return Number(result.rows[0]?.share ?? 1)
}

export interface BudgetUse {
  upstream: string
  /** The budget's slots: requests a window allows (fewer while narrowed after 429s). */
  slots: number
  /** Slots taken within the window now. */
  busy: number
  /** Paused by a 429 until then; null when not paused. */
  pausedUntil: Date | null
}

/** How much of each upstream's shared budget is in use now, for the status page. */
export async function readBudgetUse(db: Db): Promise<BudgetUse[]> {
  const result = await sql<{ upstream: string; slots: number; busy: number; paused_until: Date | null }>`
    select b.upstream,
      (select count(*)::int from sync.upstream_budget_slots s where s.upstream = b.upstream) as slots,
      (select count(*)::int from sync.upstream_budget_slots s
        where s.upstream = b.upstream and s.free_at > now()) as busy,
      case when b.paused_until > now() then b.paused_until end as paused_until
    from sync.upstream_budget b order by b.upstream
  `.execute(db)
  return result.rows.map((row) => ({
    upstream: row.upstream,
    slots: row.slots,
    busy: row.busy,
    pausedUntil: row.paused_until,
  }))
}
