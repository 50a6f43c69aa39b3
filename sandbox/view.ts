// How a response shows stored rows: the account, and timestamps in its local offset.
import { formatTimestamp } from './clock.ts'
import type { Store } from './store.ts'

export interface View {
  store: Store
  accountId: number
  time(seconds: number): string
}

export function createView(store: Store, accountId: number, offsetMinutes: number): View {
  return { store, accountId, time: (seconds) => formatTimestamp(seconds, offsetMinutes) }
}

/** One search response of the real CRM used `Z` instead of the account's offset; so does ours. */
export function utcView(view: View): View {
  return { ...view, time: (seconds) => formatTimestamp(seconds, 0) }
}

export function stamp(view: View, seconds: number | null): string | null {
  return seconds === null ? null : view.time(seconds)
}
