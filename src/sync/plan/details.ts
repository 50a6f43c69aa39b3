// How the details pass (src/sync/details/) spends the budget: pure decisions over one read of the state.
// The pass reads, per record, the lists no include carries (a person's historic events and assistants),
// one request a list, at most DETAILS_BUDGET_PERCENT of the CRM's budget in any window, and only with
// what everything else leaves: it waits while a CRM resource is in its first sync (the first complete
// mirror comes first), and unless the rest leaves its share and a fifth of the budget free (a fifth:
// where polls yield, ./polls.ts), so that no poll, sweep or refresh waits for it.
// docs/how-sync-works.md, "Details pass".
import { POLL_YIELD_BELOW } from './polls.ts'

export interface DetailsFacts {
  /** DETAILS_BUDGET_PERCENT as a share: 0 turns the pass off. */
  share: number
  /** A CRM resource mirrored has had no sweep finish yet, and one is under way. */
  firstSync: boolean
  /** The share of the CRM's budget window not yet spent (store/budget.ts), the pass's own included. */
  freeShare: number
  /** The share of the budget window the pass's own requests hold (they count as spent in `freeShare`). */
  ownShare: number
}

/** Why the pass waits instead of reading, or null when it reads. */
export function detailsWait(facts: DetailsFacts): 'off' | 'first sync' | 'budget' | null {
  if (facts.share <= 0) return 'off'
  if (facts.firstSync) return 'first sync'
  // What the rest of the engine leaves: the free share and what the pass holds itself.
  return facts.freeShare + facts.ownShare < POLL_YIELD_BELOW + facts.share ? 'budget' : null
}

/**
 * The windows over which the pass counts what it spent: one, or as many as it takes for its share to
 * pay for one record (at 2%, one request a window, a record of two requests every two windows).
 */
export function detailsHorizon(share: number, requests: number, routes: number): number {
  return Math.max(1, Math.ceil(routes / (share * requests)))
}

/**
 * Records the pass may read now: what is left of its share over the horizon (`requests` a window),
 * less the requests it sent within it, at `routes` requests a record (one more for each further page
 * of a list, which the rare record with many items needs, counted once sent).
 */
export function detailsAllowance(
  share: number,
  requests: number,
  routes: number,
  spentInHorizon: number,
): number {
  const horizon = detailsHorizon(share, requests, routes)
  // Rounded first: a share such as 0.29 of 200 is 57.99999999999999 in floating point.
  const budget = Math.round(share * requests * horizon * 1e6) / 1e6
  return Math.max(0, Math.floor((budget - spentInHorizon) / routes))
}
