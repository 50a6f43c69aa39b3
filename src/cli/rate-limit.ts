// Which sweeps of a run wait for their upstream's rate limit, for the progress of `resync --wait`.
// The request budget that every crm-sync process shares (sync.upstream_budget) says when an upstream
// can take no request now: a 429 paused it, or every request of its window is spent. A running sweep of
// that upstream that has saved no page for a while (its progress_at) waits for the limit then, whichever
// process runs it. Two small reads per poll, none while no sweep of the run is running.
import { sql } from 'kysely'
import { findResource } from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import type { RunView } from '../store/runs.ts'
import { upstreamName } from './format.ts'
import type { SweepWaits } from './run-progress.ts'

/** A sweep that has saved a page within this long is working, whatever the budget says. */
export const STALLED_MS = 2000

interface BudgetState {
  upstream: string
  /** Seconds left of a pause after a 429, or null. */
  paused_seconds: number | null
  /** Every request of the window is spent: the next is free only at the earliest slot's time. */
  spent: boolean
}

async function budgets(db: Db): Promise<Map<string, BudgetState>> {
  const { rows } = await sql<BudgetState>`
    select b.upstream,
      case when b.paused_until > clock_timestamp()
        then ceil(extract(epoch from b.paused_until - clock_timestamp()))::int end as paused_seconds,
      coalesce((select min(s.free_at) from sync.upstream_budget_slots s where s.upstream = b.upstream)
        > clock_timestamp(), false) as spent
    from sync.upstream_budget b`.execute(db)
  return new Map(rows.map((row) => [row.upstream, row]))
}

async function stalledSweeps(db: Db, runId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('sync.run_resources')
    .select('resource')
    .where('run_id', '=', runId)
    .where('status', '=', 'running')
    .where('progress_at', '<', sql<Date>`clock_timestamp() - make_interval(secs => ${STALLED_MS / 1000})`)
    .execute()
  return rows.map((row) => row.resource)
}

/** The sweeps of `run` that wait for their upstream's rate limit, each with the words that say so. */
export async function readSweepWaits(db: Db, run: RunView): Promise<SweepWaits> {
  const waits = new Map<string, string>()
  if (!run.resources.some((sweep) => sweep.status === 'running')) return waits
  const stalled = await stalledSweeps(db, run.id)
  if (stalled.length === 0) return waits
  const states = await budgets(db)
  for (const resource of stalled) {
    const service = findResource(resource)?.service
    const state = service ? states.get(service) : undefined
    if (!service || !state) continue
    const limit = `waiting for ${upstreamName(service)}'s rate limit`
    if (state.paused_seconds !== null)
      waits.set(resource, `${limit} (paused by a 429, ${state.paused_seconds} s left)`)
    else if (state.spent) waits.set(resource, limit)
  }
  return waits
}
