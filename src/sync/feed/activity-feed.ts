// The CRM's activity log as a change feed. The log names every create, update and destroy of people,
// companies, deals, projects, tasks and notes; tasks and notes have no webhooks, and a webhook may be
// lost. Every ACTIVITY_POLL_SECONDS one replica (the holder of the feed's lease, store/activity-feed.ts)
// reads the log newest first, from page 1, until a page reaches the newest activity it read before: an
// idle account costs one request a poll for the whole CRM. For each record the new activities name, it
// queues a refresh (`show`; 404 tombstones), unless the mirror already holds a change at least as new.
// The activities read are written to crm.activities as well. Refreshes, rows and the cursor commit in
// one transaction, so a crash reads the same activities again rather than losing them.
//
// Built for the worst plausible log: `filter[created_at][larger_than]` (a second before the newest
// activity read) and `order=created_at-desc` are sent, and neither is relied on; `page` may be ignored
// (one page three times in a row ends the read, paging.ts `pageRepeats`). Activity ids are taken to
// grow with time (the upstream's ids are sequential): an activity is new when its id is larger than
// the newest one read. The first poll only sets the cursor: what changed before it is the sweeps' to
// find. Past MAX_PAGES of new activities the cursor moves on anyway and the gap is logged; the sweeps
// and reconciliation stay the safety net, as they do for what the log does not name (silent cascades)
// or names under an unknown attachable type.
import type { Kysely } from 'kysely'
import type { FetchedRecord, Order, ResourceReader } from '../../api-client/index.ts'
import { pageRepeats } from '../../api-client/paging.ts'
import type { Logger } from '../../log.ts'
import {
  type AnyResource,
  activities,
  companies,
  deals,
  notes,
  people,
  projects,
  tasks,
} from '../../resources/index.ts'
import { advanceFeed } from '../../store/activity-feed.ts'
import type { Db } from '../../store/database.ts'
import { mirroredStates, upsertRecords } from '../../store/records.ts'
import type { Database } from '../../store/schema.ts'
import type { RefreshJob } from '../job-queue.ts'
import { LeaseLost, pollLease } from './lease.ts'
import type { Poller } from './poll-loop.ts'

export const FEED_NAME = 'crm.activities'
const MAX_PAGES = 20
const NEWEST_FIRST: Order = { field: 'created_at', direction: 'desc' }

/** The resources whose every create, update and destroy the log names. */
export const FEED_COVERS: ReadonlySet<string> = new Set(
  [people, companies, deals, projects, tasks, notes].map((resource) => resource.name),
)

const BY_ATTACHABLE_TYPE: Record<string, AnyResource> = {
  Person: people,
  Company: companies,
  Deal: deals,
  Project: projects,
  Task: tasks,
}

/** The resource an activity's `attachable_type` names: notes as `Protocol` or any type of note. */
export function resourceOfAttachable(type: unknown): AnyResource | undefined {
  if (typeof type !== 'string') return undefined
  if (type.startsWith('Protocol') || type === 'Note') return notes
  return Object.hasOwn(BY_ATTACHABLE_TYPE, type) ? BY_ATTACHABLE_TYPE[type] : undefined
}

export interface ActivityFeedDeps {
  db: Db
  reader: ResourceReader
  logger: Logger
  /** Queues a refresh of one record inside `trx` (job-queue.ts `enqueueRefresh`). */
  queueRefresh(trx: Kysely<Database>, job: RefreshJob): Promise<unknown>
  /** Activities written to crm.activities. */
  onApplied?(resource: string, records: number): void
  /**
   * The poll did not read back to the activity it read before (more than `maxPages` of new ones): the
   * changes in between are the sweeps' of these resources to find, now.
   */
  onGap?(resources: readonly string[]): Promise<void>
  maxPages?: number
  /** The resources mirrored (MIRROR_RESOURCES): changes of the others are not refreshed; every one if not given. */
  mirrored?: ReadonlySet<string>
  /** Tests shorten the lease (lease.ts). */
  leaseSeconds?: number
}

export interface PollResult {
  /** `standby`: another replica holds the feed. */
  status: 'polled' | 'standby'
  requests: number
  /** Activities newer than the cursor. */
  activities: number
  refreshes: number
  /** Activities naming a type the feed does not know (`attachable_type`), left to the sweeps. */
  unknown: number
  /** The newest activity read before was not reached within the page limit. */
  gap: boolean
}

/** Reads the log once a poll, if this replica holds (or takes) the feed's lease. */
export type ActivityFeed = Poller<PollResult>

interface Change {
  resource: AnyResource
  id: number
  createdAt: number
  verb: string
  askedAt: Date
}

const timeOf = (record: FetchedRecord) => Date.parse(String(record.created_at ?? ''))

/** The newest activity of each record the activities name; `unknown` counts the types it does not know. */
function changesOf(
  fresh: readonly { record: FetchedRecord; askedAt: Date }[],
  unknown: Map<string, number>,
): Change[] {
  const changes = new Map<string, Change>()
  for (const { record, askedAt } of fresh) {
    const resource = resourceOfAttachable(record.attachable_type)
    const id = Number(record.attachable_id)
    if (!resource) {
      const type = String(record.attachable_type)
      unknown.set(type, (unknown.get(type) ?? 0) + 1)
      continue
    }
    if (!Number.isSafeInteger(id) || id <= 0) continue
    const key = `${resource.name}:${id}`
    const createdAt = timeOf(record)
    const known = changes.get(key)
    if (known && !(createdAt > known.createdAt)) continue
    changes.set(key, { resource, id, createdAt, verb: String(record.verb ?? ''), askedAt })
  }
  return [...changes.values()]
}

/** Whether the mirror holds the change already: tombstoned for a destroy, as new or newer otherwise. */
async function unanswered(db: Db, changes: Change[]): Promise<Change[]> {
  const wanted: Change[] = []
  for (const resource of new Set(changes.map((change) => change.resource))) {
    const own = changes.filter((change) => change.resource === resource)
    const states = await mirroredStates(
      db,
      resource,
      own.map((change) => change.id),
    )
    for (const change of own) {
      const state = states.get(change.id)
      const held =
        state &&
        (change.verb === 'destroy'
          ? state.deleted
          : !state.deleted && state.updatedAt !== null && state.updatedAt.getTime() >= change.createdAt)
      if (!held) wanted.push(change)
    }
  }
  return wanted
}

/** Whether the feed refreshes (or writes, for crm.activities) the resource: mirrored, or no choice made. */
const mirrors = (deps: ActivityFeedDeps, resource: AnyResource) => deps.mirrored?.has(resource.name) ?? true

/**
 * Hands a gap to the sweeps (of the resources it names, and of the log itself when mirrored); the
 * cursor has moved past it, so a failure is logged, not retried.
 */
async function handOver(deps: ActivityFeedDeps): Promise<void> {
  try {
    await deps.onGap?.([...FEED_COVERS, activities.name].filter((name) => deps.mirrored?.has(name) ?? true))
  } catch (error) {
    deps.logger.warn({ err: error }, 'activity feed: no run started after a gap; the next one finds it')
  }
}

export function createActivityFeed(deps: ActivityFeedDeps): ActivityFeed {
  const { db, reader, logger } = deps
  const lease = pollLease(db, FEED_NAME, deps.leaseSeconds)
  const { owner } = lease
  const maxPages = deps.maxPages ?? MAX_PAGES
  // Unknown types warned about by this process: each once.
  const warnedTypes = new Set<string>()

  async function pollOnce(): Promise<PollResult> {
    const idle = { requests: 0, activities: 0, refreshes: 0, unknown: 0, gap: false }
    const cursor = await lease.take()
    if (!cursor) return { status: 'standby', ...idle }
    const floor = cursor.newestCreatedAt ? cursor.newestCreatedAt.getTime() - 1000 : null
    const filter = floor === null ? undefined : { created_at: { larger_than: new Date(floor).toISOString() } }
    const fresh = new Map<number, { record: FetchedRecord; askedAt: Date }>()
    let requests = 0
    const repeats = pageRepeats()
    // The first poll only sets the cursor. After it, a log that was empty makes every activity new.
    const first = cursor.polledAt === null
    let reached = first
    let firstFetchedAt: Date | null = null
    for (let page = 1; page <= maxPages; page++) {
      const answer = await reader.index(activities, { page, order: NEWEST_FIRST, filter })
      requests++
      firstFetchedAt ??= answer.fetchedAt
      const ids = answer.records.map((record) => Number(record.id))
      const repeat = repeats(ids.join(','))
      if (answer.size === 0 || repeat === 'end') {
        reached = true
        break
      }
      // A page's worth of new activities moved the next page onto the one read: read on.
      if (repeat === 'again') continue
      for (const record of answer.records) {
        const id = Number(record.id)
        if ((cursor.newestId === null || id > cursor.newestId) && !fresh.has(id))
          fresh.set(id, { record, askedAt: answer.fetchedAt })
      }
      if (first) break
      const times = answer.records.map(timeOf)
      if (
        ids.some((id) => id <= (cursor.newestId as number)) ||
        (floor !== null && times.length > 0 && times.every((time) => time < floor))
      ) {
        reached = true
        break
      }
    }
    const records = [...fresh.values()]
    const unknown = new Map<string, number>()
    const named = first ? [] : changesOf(records, unknown).filter((change) => mirrors(deps, change.resource))
    const changes = await unanswered(db, named)
    for (const [type, count] of unknown) {
      if (warnedTypes.has(type)) continue
      warnedTypes.add(type)
      logger.warn(
        { attachableType: type, activities: count },
        'activity feed: activities of a type it does not know; the sweeps find their changes (logged once a type)',
      )
    }
    let newest = { newestId: cursor.newestId, newestCreatedAt: cursor.newestCreatedAt }
    for (const { record } of records) {
      const id = Number(record.id)
      const time = timeOf(record)
      if (newest.newestId === null || id > newest.newestId) {
        const at = Number.isNaN(time) ? newest.newestCreatedAt : new Date(time)
        newest = { newestId: id, newestCreatedAt: at }
      }
    }
    if (!reached) {
      logger.warn(
        { pages: maxPages, activities: records.length },
        'activity feed: the newest activity read before is not within the page limit; an incremental run of the resources it covers finds the rest',
      )
    }
    try {
      await db.transaction().execute(async (trx) => {
        if (records.length && firstFetchedAt && mirrors(deps, activities)) {
          await upsertRecords(
            trx,
            activities,
            records.map((entry) => entry.record),
            { source: 'fetch', fetchedAt: firstFetchedAt },
          )
        }
        for (const change of changes) {
          const at = change.askedAt.toISOString()
          await deps.queueRefresh(trx, {
            resource: change.resource.name,
            id: change.id,
            receivedAt: at,
            askedAt: at,
          })
        }
        const gap = !reached || first
        const wroteLog = mirrors(deps, activities)
        if (!(await advanceFeed(trx, FEED_NAME, owner, newest, { gap, wroteLog }))) throw new LeaseLost()
      })
    } catch (error) {
      if (error instanceof LeaseLost) return { status: 'standby', ...idle, requests }
      throw error
    }
    if (records.length && mirrors(deps, activities)) deps.onApplied?.(activities.name, records.length)
    if (changes.length)
      logger.debug({ activities: records.length, refreshes: changes.length }, 'activity feed')
    if (!reached) await handOver(deps)
    return {
      status: 'polled',
      requests,
      activities: records.length,
      refreshes: changes.length,
      unknown: [...unknown.values()].reduce((sum, count) => sum + count, 0),
      gap: !reached,
    }
  }

  return { pollOnce, owner, keep: lease.keep, release: lease.release }
}
