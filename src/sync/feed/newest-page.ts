// Polls of a resource's newest page. The reservation service has no webhooks and no change log: its
// contacts and bookings reach the mirror within a poll only by reading their index newest first
// (`order=updated_at-desc`) every RESERVATION_POLL_SECONDS. One replica polls each resource (its lease,
// lease.ts). A poll reads from page 1 until a page holds a record older than its floor (a few seconds
// before the newest `updated_at` it read before: room for a write that commits late) or nothing the
// mirror lacks, at most MAX_PAGES, and writes what the mirror lacks: an idle account costs one request
// a poll per resource, and no write.
//
// What a poll misses stays the sweeps' to find, as it was without polls: a deletion (the index shows
// none), a record shifted from an unread page onto a read one between two requests (deletions while a
// poll reads more than a page), and past MAX_PAGES of changes, the rest: the poll then starts an
// incremental run of the resource (`onGap`). The order of records that share a timestamp does not
// matter here: every record at or after the floor comes before the first one older than it.
import type { FetchedRecord, Order, ResourceReader } from '../../api-client/index.ts'
import { pageRepeats } from '../../api-client/paging.ts'
import type { Logger } from '../../log.ts'
import type { Resource } from '../../resources/index.ts'
import { advanceFeed } from '../../store/activity-feed.ts'
import type { Db } from '../../store/database.ts'
import { mirroredStates, newerThanMirror, upsertRecords } from '../../store/records.ts'
import { LeaseLost, pollLease } from './lease.ts'
import type { Poller } from './poll-loop.ts'

const MAX_PAGES = 4
/** The floor lies this far before the newest `updated_at` read. */
const FLOOR_SLACK_MS = 5_000
const NEWEST_FIRST: Order = { field: 'updated_at', direction: 'desc' }

export interface NewestPageDeps {
  db: Db
  reader: ResourceReader
  resource: Resource
  logger: Logger
  onApplied?(resource: string, records: number): void
  /** More than `maxPages` of changes since the last poll: the rest is an incremental sweep's to find. */
  onGap?(resources: readonly string[]): Promise<void>
  maxPages?: number
  /** Tests shorten the lease (lease.ts). */
  leaseSeconds?: number
}

export interface NewestPageResult {
  status: 'polled' | 'standby'
  requests: number
  /** Records written to the mirror. */
  written: number
  /** The floor was not reached within the page limit. */
  gap: boolean
}

const timeOf = (record: FetchedRecord) => Date.parse(String(record.updated_at ?? ''))

export function createNewestPagePoll(deps: NewestPageDeps): Poller<NewestPageResult> {
  const { db, reader, resource, logger } = deps
  const lease = pollLease(db, `${resource.name}.newest`, deps.leaseSeconds)
  const maxPages = deps.maxPages ?? MAX_PAGES

  async function pollOnce(): Promise<NewestPageResult> {
    const idle = { requests: 0, written: 0, gap: false }
    const cursor = await lease.take()
    if (!cursor) return { status: 'standby', ...idle }
    const floor = cursor.newestCreatedAt ? cursor.newestCreatedAt.getTime() - FLOOR_SLACK_MS : null
    const wanted = new Map<number, { record: FetchedRecord; fetchedAt: Date }>()
    let newest = cursor.newestCreatedAt?.getTime() ?? 0
    let requests = 0
    const repeats = pageRepeats()
    // The first poll reads page 1 only and sets the floor; what came before is the sweeps' to find.
    const first = floor === null
    let reached = first
    for (let page = 1; page <= maxPages; page++) {
      const answer = await reader.index(resource, { page, order: NEWEST_FIRST })
      requests++
      const repeat = repeats(answer.records.map((record) => record.id).join(','))
      // An empty page, or one page three times in a row (an upstream that ignores `page`), ends the
      // read; a page again because a page's worth of changes moved the next one onto it does not.
      if (answer.size === 0 || repeat === 'end') {
        reached = true
        break
      }
      if (repeat === 'again') continue
      const recent = answer.records.filter((record) => first || timeOf(record) >= (floor as number))
      // A record older than the floor: every record at or after it has been read.
      if (recent.length < answer.records.length) reached = true
      const states = await mirroredStates(
        db,
        resource,
        recent.map((record) => Number(record.id)),
      )
      const newer = recent.filter((record) => newerThanMirror(record, states.get(Number(record.id))))
      for (const record of newer) wanted.set(Number(record.id), { record, fetchedAt: answer.fetchedAt })
      for (const record of recent) newest = Math.max(newest, timeOf(record))
      // A page the mirror holds all of: what follows is older, or read before (a burst of more than a
      // page within the floor's slack costs one request a poll, not its every page).
      if (newer.length === 0) reached = true
      if (reached) break
    }
    try {
      await db.transaction().execute(async (trx) => {
        // Each page's records with its own request's time: the upsert compares it with the row's.
        const entries = [...wanted.values()]
        for (const fetchedAt of new Set(entries.map((entry) => entry.fetchedAt))) {
          const records = entries
            .filter((entry) => entry.fetchedAt === fetchedAt)
            .map((entry) => entry.record)
          await upsertRecords(trx, resource, records, { source: 'fetch', fetchedAt })
        }
        const cursorNow = { newestId: null, newestCreatedAt: newest > 0 ? new Date(newest) : null }
        if (!(await advanceFeed(trx, lease.feed, lease.owner, cursorNow, { gap: !reached })))
          throw new LeaseLost()
      })
    } catch (error) {
      if (error instanceof LeaseLost) return { status: 'standby', ...idle, requests }
      throw error
    }
    if (wanted.size) deps.onApplied?.(resource.name, wanted.size)
    if (!reached) {
      logger.warn(
        { resource: resource.name, pages: maxPages },
        'newest-page poll: more changes than its page limit; an incremental run of the resource finds the rest',
      )
      await deps.onGap?.([resource.name]).catch((error: unknown) => {
        logger.warn({ err: error }, 'newest-page poll: no run started after a gap; the next one finds it')
      })
    }
    return { status: 'polled', requests, written: wanted.size, gap: !reached }
  }

  return { pollOnce, owner: lease.owner, keep: lease.keep, release: lease.release }
}
