// Whether a freshness poll (the activity feed, a newest page) spends its service's budget now, or waits
// a period: a pure decision over one read of the state (`readPollFacts`). A poll yields to what needs
// the budget more: the first sync of what it covers (which reads everything anyway), and work that
// leaves less than a fifth of the budget free (sweeps, reconciliation, a burst of refreshes). Polls
// then wait; correctness work is never made to wait for them. docs/how-sync-works.md, "Freshness polls".
import { freeBudgetShare } from '../../store/budget.ts'
import type { Db } from '../../store/database.ts'
import { inFirstSync } from '../../store/sync-state.ts'

/** A poll runs while at least this share of its service's budget is free; else it waits a period. */
export const POLL_YIELD_BELOW = 0.2

export interface PollFacts {
  /** A resource the poll covers has had no sweep finish yet, and one is under way. */
  firstSync: boolean
  /** The share of the service's budget window not yet spent (store/budget.ts). */
  freeShare: number
}

/** Why a poll waits a period instead of polling, or null when it polls. */
export function pollWaits(facts: PollFacts): 'first sync' | 'budget' | null {
  if (facts.firstSync) return 'first sync'
  return facts.freeShare < POLL_YIELD_BELOW ? 'budget' : null
}

/** The one read a poll's decision is made from. */
export async function readPollFacts(db: Db, service: string, covers: readonly string[]): Promise<PollFacts> {
  const [firstSync, freeShare] = await Promise.all([inFirstSync(db, covers), freeBudgetShare(db, service)])
  return { firstSync, freeShare }
}
