// The state of the activity feed (src/sync/feed): where it has read the CRM's activity log to, and which
// replica polls it. One row per feed in sync.activity_feed. A replica polls while it holds the lease;
// one that dies lets it lapse, and another takes it over with the cursor where the last poll left it.
import { sql } from 'kysely'
import type { Db } from './database.ts'

export interface FeedCursor {
  /** The newest activity read (null: none, the log was empty or the feed has never polled). */
  newestId: number | null
  newestCreatedAt: Date | null
}

export interface LeasedCursor extends FeedCursor {
  /** When a poll last moved the cursor (null: never, the next poll is the first). */
  polledAt: Date | null
}

/**
 * Takes or renews the lease of `feed` for `owner` for `leaseMs`; null when another replica holds it.
 * Returns the cursor the last poll left.
 */
export async function takeFeedLease(
  db: Db,
  feed: string,
  owner: string,
  leaseMs: number,
): Promise<LeasedCursor | null> {
  const result = await sql<{
    newest_id: string | number | null
    newest_created_at: Date | null
    polled_at: Date | null
  }>`
    insert into sync.activity_feed as f (feed, lease_owner, lease_until)
    values (${feed}, ${owner}, now() + make_interval(secs => ${leaseMs / 1000}))
    on conflict (feed) do update set lease_owner = excluded.lease_owner, lease_until = excluded.lease_until
    where f.lease_owner = excluded.lease_owner or f.lease_until is null or f.lease_until < now()
    returning newest_id, newest_created_at, polled_at
  `.execute(db)
  const row = result.rows[0]
  if (!row) return null
  return {
    newestId: row.newest_id === null ? null : Number(row.newest_id),
    newestCreatedAt: row.newest_created_at,
    polledAt: row.polled_at,
  }
}

/**
 * Moves the cursor, while `owner` holds the lease; false when it has lost it. `gap`: this poll did not
 * read back to the cursor before it (or there was none, the first poll): the feed answers for changes
 * from now on only. `wroteLog` (the activity feed's): whether this poll wrote what it read to
 * crm.activities; `log_written_since` then holds since when every entry read was written, and is
 * cleared by a poll that wrote nothing.
 */
export async function advanceFeed(
  db: Db,
  feed: string,
  owner: string,
  cursor: FeedCursor,
  options: { gap: boolean; wroteLog?: boolean },
): Promise<boolean> {
  const coveredSince = options.gap ? sql`now()` : sql`coalesce(covered_since, now())`
  const logWrittenSince =
    options.wroteLog === undefined
      ? sql`log_written_since`
      : !options.wroteLog
        ? sql`null`
        : options.gap
          ? sql`now()`
          : sql`coalesce(log_written_since, now())`
  const result = await sql`
    update sync.activity_feed set newest_id = ${cursor.newestId},
      newest_created_at = ${cursor.newestCreatedAt}, polled_at = now(), updated_at = now(),
      covered_since = ${coveredSince}, log_written_since = ${logWrittenSince}
    where feed = ${feed} and lease_owner = ${owner}
  `.execute(db)
  return Number(result.numAffectedRows ?? 0) > 0
}

export interface FeedCoverage {
  /** Every change the log names since then has been read (null: never polled). */
  coveredSince: Date | null
  /** Every entry read since then is in crm.activities (null: not written, or a gap since). */
  logWrittenSince: Date | null
  /** The newest entry read (null: none). */
  newestId: number | null
  /** The last poll that read the log. */
  polledAt: Date | null
}

export async function readFeedCoverage(db: Db, feed: string): Promise<FeedCoverage | null> {
  const row = await db
    .selectFrom('sync.activity_feed')
    .select(['covered_since', 'log_written_since', 'newest_id', 'polled_at'])
    .where('feed', '=', feed)
    .executeTakeFirst()
  if (!row) return null
  return {
    coveredSince: row.covered_since,
    logWrittenSince: row.log_written_since,
    newestId: row.newest_id === null ? null : Number(row.newest_id),
    polledAt: row.polled_at,
  }
}

/** Lets the lease go at once (a stopping replica), so that another takes the feed over at its next poll. */
export async function releaseFeed(db: Db, feed: string, owner: string): Promise<void> {
  await db
    .updateTable('sync.activity_feed')
    .set({ lease_until: null })
    .where('feed', '=', feed)
    .where('lease_owner', '=', owner)
    .execute()
}
