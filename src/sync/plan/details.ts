// How the details pass (src/sync/details/) spends the budget: a pure decision over one read of the state.
// The pass reads, per record, the lists no include carries (a person's historic events and assistants),
// one request a list, at most DETAILS_BUDGET_PERCENT of the CRM's budget, and only with what everything
// else leaves: it waits while a CRM resource is in its first sync (the first complete mirror comes
// first), and unless its batch would leave a fifth of the budget free (where polls yield, ./polls.ts),
// so that no poll, sweep or refresh waits for it. Its own requests of a batch are out of the window by
// the next (the period is about a window), so the share free at a batch's start is what the rest
// leaves. docs/how-sync-works.md, "Details pass".
import { POLL_YIELD_BELOW } from './polls.ts'

export interface DetailsFacts {
  /** DETAILS_BUDGET_PERCENT as a share: 0 turns the pass off. */
  share: number
  /** A CRM resource mirrored has had no sweep finish yet, and one is under way. */
  firstSync: boolean
  /** The share of the CRM's budget window not yet spent (store/budget.ts). */
  freeShare: number
}

/** Why the pass waits a period instead of reading, or null when it reads. */
export function detailsWait(facts: DetailsFacts): 'off' | 'first sync' | 'budget' | null {
  if (facts.share <= 0) return 'off'
  if (facts.firstSync) return 'first sync'
  return facts.freeShare < POLL_YIELD_BELOW + facts.share ? 'budget' : null
}

export interface DetailsPace {
  /** Records read a batch. */
  batch: number
  /** Seconds between the end of a batch and the next. */
  periodSeconds: number
}

/**
 * Batches and their period such that the pass sends at most `share` of `requests` a window of
 * `windowSeconds`, each record costing `routes` requests (one more for each further page of a list,
 * which the rare record with many items needs): the batch is what a window's share pays for (at least
 * one record), and the period stretches when one record costs more than a window's share.
 */
export function detailsPace(
  share: number,
  requests: number,
  windowSeconds: number,
  routes: number,
): DetailsPace {
  const perWindow = share * requests
  const batch = Math.max(1, Math.floor(perWindow / routes))
  return { batch, periodSeconds: (windowSeconds * batch * routes) / perWindow }
}
