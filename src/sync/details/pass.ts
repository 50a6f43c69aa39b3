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
// empty page, a short one, or one that repeats the page before (an upstream that ignores `page`).
import type { CrmClient } from '../../api-client/index.ts'
import type { Logger } from '../../log.ts'
import type { ChildMapping, Resource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { type DetailList, detailMappings, pickDueDetails, writeDetails } from '../../store/record-details.ts'
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
}

export interface DetailsPassResult {
  status: 'polled' | 'standby'
  /** Records whose details were read and written. */
  read: number
  /** Records the upstream answered 404 for: deleted upstream (the sweeps and checks tombstone them). */
  gone: number
  requests: number
}

type ListsRead = { status: 'found'; lists: DetailList[]; readAt: Date } | { status: 'gone'; readAt: Date }

/** Every page of one list of one record. */
async function readList(
  deps: DetailsPassDeps,
  id: number,
  mapping: ChildMapping,
  count: () => void,
): Promise<{ status: 'found'; items: unknown[]; firstAt: Date } | { status: 'gone'; firstAt: Date }> {
  const items: unknown[] = []
  let previous = ''
  let firstAt: Date | undefined
  for (let page = 1; page <= MAX_PAGES; page++) {
    const answer = await deps.crm.nestedPage(deps.resource, id, mapping.route as string, {
      page,
      perPage: PER_PAGE,
    })
    count()
    firstAt ??= answer.fetchedAt
    if (answer.status === 'gone') return { status: 'gone', firstAt }
    const joined = JSON.stringify(answer.items)
    if (answer.items.length === 0 || (page > 1 && joined === previous)) break
    previous = joined
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

async function readLists(deps: DetailsPassDeps, id: number, count: () => void): Promise<ListsRead> {
  const lists: DetailList[] = []
  let readAt: Date | undefined
  for (const mapping of detailMappings(deps.resource)) {
    const list = await readList(deps, id, mapping, count)
    readAt ??= list.firstAt
    if (list.status === 'gone') return { status: 'gone', readAt }
    lists.push({ mapping, items: list.items })
  }
  return { status: 'found', lists, readAt: readAt ?? new Date() }
}

export interface DetailsPass extends Poller<DetailsPassResult> {
  /** Ends the poll under way after the record in hand (a stop need not wait for a whole poll). */
  halt(): void
  /** The share of the budget's window that this pass's own requests hold now. */
  ownShare(): number
}

export function createDetailsPass(deps: DetailsPassDeps): DetailsPass {
  const { db, resource, share, requests, windowMs } = deps
  const lease = pollLease(db, `${resource.name}.details`, deps.leaseSeconds)
  const routes = detailMappings(resource).length
  const horizonMs = detailsHorizon(share, requests, routes) * windowMs
  /** When each of its requests within the horizon was answered (the budget counts a slot from then). */
  let sent: number[] = []
  let idleUntil = 0
  let halted = false
  const sentWithin = (ms: number) => {
    const since = Date.now() - ms
    return sent.filter((at) => at > since).length
  }

  async function pollOnce(): Promise<DetailsPassResult> {
    const outcome = { read: 0, gone: 0, requests: 0 }
    if (!(await lease.take())) return { status: 'standby', ...outcome }
    sent = sent.filter((at) => at > Date.now() - horizonMs)
    const allowed = detailsAllowance(share, requests, routes, sent.length)
    if (allowed === 0 || Date.now() < idleUntil) return { status: 'polled', ...outcome }
    const count = () => {
      outcome.requests++
      sent.push(Date.now())
    }
    const due = await pickDueDetails(db, resource, allowed)
    if (due.length < allowed) idleUntil = Date.now() + IDLE_MS
    try {
      for (const record of due) {
        if (halted) break
        const read = await readLists(deps, record.id, count)
        // A 404: the record is gone upstream, or the upstream serves no such list. Either way its rows
        // are left as they are, and it is not asked again until it changes; a record deleted upstream is
        // tombstoned by what finds deletions (sweeps, checks), never on this answer alone.
        const lists = read.status === 'found' ? read.lists : []
        if (read.status === 'gone') outcome.gone++
        await writeDetails(db, resource, record.id, { lists, readAt: read.readAt, readFor: record.updatedAt })
        outcome.read++
      }
    } finally {
      // Counted also when a request failed for good: what was read before it is written.
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
