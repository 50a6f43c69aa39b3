// The details pass: reads, per record, the lists that no include carries (a person's historic events,
// `people/{id}/historic_events`, and assistants, `people/{id}/assis`), as many due records a poll as
// its share of the budget allows (store/record-details.ts says which are due and in what order), and
// writes each record's lists with the time it read them, so that a restart goes on where the pass
// stood. One replica reads at a time (its lease, ../feed/lease.ts); how much of the budget it spends,
// and when it waits, is ../plan/details.ts. When nothing is due, it looks again after IDLE_MS.
// docs/how-sync-works.md, "Details pass".
//
// A listing's shape and paging are not shown upstream: each is asked for 250 items a page, and a page
// of FOLLOW_AT or more items is followed by the next (the upstream may give fewer than asked), until an
// empty page, a short one, or one page three times in a row (../../api-client/paging.ts `pageRepeats`).
import { type CrmClient, RequestAborted } from '../../api-client/index.ts'
import { pageRepeats } from '../../api-client/paging.ts'
import type { Logger } from '../../log.ts'
import type { ChildMapping, Resource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import {
  type DetailList,
  detailMappings,
  markDetailsFailed,
  pickDueDetails,
  writeDetails,
} from '../../store/record-details.ts'
import { pollLease } from '../feed/lease.ts'
import type { Poller } from '../feed/poll-loop.ts'
import { detailsAllowance, detailsHorizon } from '../plan/details.ts'

/** `perpage` asked of a nested listing. */
const PER_PAGE = 250
/** A page with this many items or more may not be the last: the next is read. */
export const FOLLOW_AT = 10
/** Pages read of one list at most; a list longer than that is written as far as it was read. */
const MAX_PAGES = 50
/** After a poll that found fewer records due than it could read, the next looks again this much later. */
const IDLE_MS = 5_000
/** After a read that failed, the pass pauses this long. */
const FAILURE_IDLE_MS = 30_000

export interface DetailsPassDeps {
  db: Db
  crm: Pick<CrmClient, 'nestedPage'>
  resource: Resource
  /** DETAILS_BUDGET_PERCENT as a share of the budget: at most this many of `requests` a window. */
  share: number
  /** Requests the budget allows a window (CRM_RATE_LIMIT), and the window. */
  requests: number
  windowMs: number
  logger: Logger
  /** Told after each poll that read something. */
  onRead?(resource: string, outcome: { read: number; gone: number; requests: number }): void
  /** Tests shorten the lease (../feed/lease.ts). */
  leaseSeconds?: number
  /** The clock of the pass's own window; tests move it. */
  now?: () => number
}

export interface DetailsPassResult {
  status: 'polled' | 'standby'
  /** Records whose details were read and written (the gone ones included). */
  read: number
  /** Records whose every list answered 404: deleted upstream (the sweeps and checks tombstone them). */
  gone: number
  requests: number
}

type ListRead =
  | { status: 'found'; items: unknown[]; firstAt: Date }
  /** 404 on its first page: the record is gone upstream, or the upstream serves no such list. */
  | { status: 'missing'; firstAt: Date }
  /** The pass was halted between two pages: nothing of the record is written. */
  | { status: 'halted' }

type ListsRead =
  | { status: 'found'; lists: DetailList[]; readAt: Date }
  | { status: 'gone'; readAt: Date }
  | { status: 'halted' }

interface ReadContext {
  deps: DetailsPassDeps
  count(): void
  halted(): boolean
}

/** Every page of one list of one record. */
async function readList(ctx: ReadContext, id: number, mapping: ChildMapping): Promise<ListRead> {
  const { deps } = ctx
  const items: unknown[] = []
  const repeats = pageRepeats()
  let firstAt: Date | undefined
  for (let page = 1; page <= MAX_PAGES; page++) {
    if (ctx.halted()) return { status: 'halted' }
    const answer = await deps.crm.nestedPage(deps.resource, id, mapping.route as string, {
      page,
      perPage: PER_PAGE,
    })
    ctx.count()
    firstAt ??= answer.fetchedAt
    // A 404 past the first page ends the list: an upstream may answer so past its end.
    if (answer.status === 'gone')
      return page === 1 ? { status: 'missing', firstAt } : { status: 'found', items, firstAt }
    const repeat = repeats(answer.items.length === 0 ? '' : JSON.stringify(answer.items))
    if (answer.items.length === 0 || repeat === 'end') break
    if (repeat === 'again') continue
    items.push(...answer.items)
    if (answer.items.length < FOLLOW_AT) break
    if (page === MAX_PAGES)
      deps.logger.warn(
        { resource: deps.resource.name, id, list: mapping.key, pages: MAX_PAGES },
        'details pass: a list longer than its page limit; written as far as read',
      )
  }
  return { status: 'found', items, firstAt: firstAt as Date }
}

/**
 * The lists of one record. A list answered 404 keeps its rows (the upstream may not serve it); only a
 * record whose every list answers 404 counts as gone, and it is not tombstoned on that alone: what
 * finds deletions (sweeps, checks) does that.
 */
async function readLists(ctx: ReadContext, id: number): Promise<ListsRead> {
  const lists: DetailList[] = []
  let readAt: Date | undefined
  for (const mapping of detailMappings(ctx.deps.resource)) {
    const list = await readList(ctx, id, mapping)
    if (list.status === 'halted') return list
    readAt ??= list.firstAt
    if (list.status === 'found') lists.push({ mapping, items: list.items })
  }
  if (readAt === undefined) return { status: 'gone', readAt: new Date() }
  return lists.length === 0 ? { status: 'gone', readAt } : { status: 'found', lists, readAt }
}

export interface DetailsPass extends Poller<DetailsPassResult> {
  /** Ends the poll under way before the next request (what the record in hand read is dropped). */
  halt(): void
  /** The share of the budget's window that this pass's own requests hold now. */
  ownShare(): number
}

export function createDetailsPass(deps: DetailsPassDeps): DetailsPass {
  const { db, resource, share, requests, windowMs, logger } = deps
  const now = deps.now ?? Date.now
  const lease = pollLease(db, `${resource.name}.details`, deps.leaseSeconds)
  const routes = detailMappings(resource).length
  const horizonMs = detailsHorizon(share, requests, routes) * windowMs
  // A poll waits until its share pays for half of what a whole window's share does: a backlog is read
  // a few records a poll, not one record at each tick as the window slides.
  const smallestPoll = Math.max(1, Math.floor(detailsAllowance(share, requests, routes, 0) / 2))
  /** When each of its requests within the horizon was answered (the budget counts a slot from then). */
  let sent: number[] = []
  let idleUntil = 0
  let halted = false
  const sentWithin = (ms: number) => {
    const since = now() - ms
    return sent.filter((at) => at > since).length
  }
  const allowance = () => {
    sent = sent.filter((at) => at > now() - horizonMs)
    return detailsAllowance(share, requests, routes, sent.length)
  }

  async function pollOnce(): Promise<DetailsPassResult> {
    const outcome = { read: 0, gone: 0, requests: 0 }
    if (!(await lease.take())) return { status: 'standby', ...outcome }
    const allowed = allowance()
    if (allowed < smallestPoll || now() < idleUntil) return { status: 'polled', ...outcome }
    const ctx: ReadContext = {
      deps,
      count: () => {
        outcome.requests++
        sent.push(now())
      },
      halted: () => halted,
    }
    const due = await pickDueDetails(db, resource, allowed)
    if (due.length < allowed) idleUntil = now() + IDLE_MS
    try {
      for (const record of due) {
        // Its share spent (a list ran to further pages), the lease lost, or a stop: the rest waits.
        if (halted || allowance() === 0 || !(await lease.keep())) break
        let read: ListsRead
        try {
          read = await readLists(ctx, record.id)
        } catch (error) {
          if (error instanceof RequestAborted) break // the stop: the record was not read, nor failed
          // This record waits (30 s, doubling), the pass a while: one that always fails holds no other
          // back, and an upstream that fails everything is not asked again at once.
          await markDetailsFailed(db, resource, record.id)
          idleUntil = now() + FAILURE_IDLE_MS
          logger.warn(
            { err: error, id: record.id },
            'details pass: a read failed; the record is tried again later, the pass goes on after a pause',
          )
          break
        }
        if (read.status === 'halted') break
        const lists = read.status === 'found' ? read.lists : []
        if (read.status === 'gone') outcome.gone++
        const written = await writeDetails(db, resource, record.id, {
          lists,
          readAt: read.readAt,
          readFor: record.updatedAt,
        })
        if (written) outcome.read++
      }
    } finally {
      if (outcome.requests > 0) deps.onRead?.(resource.name, outcome)
    }
    return { status: 'polled', ...outcome }
  }

  return {
    pollOnce,
    owner: lease.owner,
    keep: lease.keep,
    release: lease.release,
    halt: () => {
      halted = true
    },
    ownShare: () => sentWithin(windowMs) / requests,
  }
}
