// The lease of one freshness poll (sync.activity_feed, one row a poll): exactly one replica polls at a
// time. The holder renews it every KEEP_SECONDS (poll-loop.ts), polling or not, and the other replicas
// try to take it as often: a holder that dies (kill -9) is replaced within LEASE_SECONDS + KEEP_SECONDS.
// A holder cut off from the database for longer lets it go; its poll then finds the lease lost when it
// writes, and writes nothing.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type LeasedCursor, releaseFeed, takeFeedLease } from '../../store/activity-feed.ts'
import type { Db } from '../../store/database.ts'

const LEASE_SECONDS = 6

export interface PollLease {
  /** The poll's name: its row in sync.activity_feed. */
  feed: string
  /** Host, process id and a random part. */
  owner: string
  /** Takes or renews the lease: the cursor the last poll left, or null while another replica holds it. */
  take(): Promise<LeasedCursor | null>
  keep(): Promise<boolean>
  release(): Promise<void>
}

export class LeaseLost extends Error {}

/** The lease of the poll named `feed`; `leaseSeconds` (default LEASE_SECONDS) is shortened by tests. */
export function pollLease(db: Db, feed: string, leaseSeconds = LEASE_SECONDS): PollLease {
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const take = () => takeFeedLease(db, feed, owner, leaseSeconds * 1000)
  return {
    feed,
    owner,
    take,
    keep: async () => (await take()) !== null,
    release: () => releaseFeed(db, feed, owner),
  }
}
