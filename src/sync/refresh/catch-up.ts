// Catch-up by index. While the refreshes of a resource queue up faster than the request budget can
// fetch their records one by one (20 changes a second against 5 requests), the newest page of its index,
// ordered updated_at-desc, holds them all: 250 records for one request. A refresh that finds others of
// its resource waiting joins the catch-up walk in flight in this process (or starts one), and is
// answered when the walk wrote its record from a request sent after its delivery arrived (the same test
// as for a fetch: handler.ts `answeredAlready`); otherwise it fetches its record as before.
//
// A walk reads pages newest first until a page brings nothing the mirror lacks (the newest-page polls'
// rule, store/records/mirrored.ts: what follows is older, and a walk before read it), or it has read as
// many records as there are refreshes waiting, or a page is entirely older than the earliest of their
// deliveries (less the lookback, for clock skew), or the index ends; at most MAX_PAGES. A refresh whose
// record the walk did not reach (a change that left `updated_at` alone, deep in the index) fetches it. Its pages are written like a sweep's. Walks of a resource start
// at most once per FLIGHT_SPACING_MS: while deliveries keep coming, a page a second keeps every record
// within seconds of its change and leaves most of the budget to sweeps and reconciliation.

import type { ResourceReader } from '../../api-client/index.ts'
import type { Logger } from '../../log.ts'
import type { AnyResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { mirroredStates, newerThanMirror, upsertRecords } from '../../store/records.ts'
import { addBacklogs, type QueuedRefreshes, type RefreshBacklog, runningRefreshes } from './backlog.ts'

const MAX_PAGES = 20
// The most refreshes a walk counts: as many records as MAX_PAGES pages of 250 hold.
const MOST_COUNTED = MAX_PAGES * 250
const FLIGHT_SPACING_MS = 1_000

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface CatchUpDeps {
  db: Db
  logger: Logger
  reader(resource: AnyResource): ResourceReader | null
  /** The refreshes queued (backlog.ts `queuedRefreshes`); the running ones are counted here. */
  queued: QueuedRefreshes
  /** Refreshes waiting (the asking one included) from which a page is cheaper than fetching each. */
  minBacklog: number
  /** Seconds of clock skew allowed between the upstream's `updated_at` and our receipt times. */
  skewSeconds: number
  onApplied?: (resource: string, records: number) => void
}

export interface CatchUp {
  /** Whether refreshes of the resource are waiting in such numbers that a page is cheaper. */
  worthIt(resource: AnyResource): Promise<boolean>
  /** Joins the walk in flight for the resource, or starts one; resolves when that walk has ended. */
  join(resource: AnyResource): Promise<void>
  /** Counts a refresh as waiting until the returned function is called (the handler runs it). */
  running(resource: string, receivedAt: string | undefined): () => void
}

export function createCatchUp(deps: CatchUpDeps): CatchUp {
  const flights = new Map<string, Promise<void>>()
  const lastStart = new Map<string, number>()
  const running = runningRefreshes()
  const backlog = async (resource: AnyResource, limit: number): Promise<RefreshBacklog> =>
    addBacklogs(await deps.queued(resource.name, limit), running.of(resource.name))

  async function walk(resource: AnyResource, reader: ResourceReader): Promise<void> {
    const { pending, oldest } = await backlog(resource, MOST_COUNTED)
    // Decided when it starts (a second after the last one, at most): the refreshes that asked may
    // have been answered by the walk before, and then there is nothing a page would save.
    if (pending < deps.minBacklog) return
    const floor = oldest ? oldest.getTime() - deps.skewSeconds * 1000 : Number.NEGATIVE_INFINITY
    let read = 0
    for (let page = 1; page <= MAX_PAGES; page++) {
      const answer = await reader.index(resource, { page, order: { field: 'updated_at', direction: 'desc' } })
      const held = await mirroredStates(
        deps.db,
        resource,
        answer.records.map((record) => Number(record.id)),
      )
      const known = answer.records.every((record) => !newerThanMirror(record, held.get(Number(record.id))))
      if (answer.records.length) {
        // Every record, known ones too: the refreshes a page answers are those of rows it wrote.
        await upsertRecords(deps.db, resource, answer.records, {
          source: 'fetch',
          fetchedAt: answer.fetchedAt,
        })
        deps.onApplied?.(resource.name, answer.records.length)
      }
      read += answer.size
      const times = answer.records.map((record) => Date.parse(record.updated_at ?? ''))
      const older = times.length > 0 && times.every((time) => time < floor)
      if (answer.size === 0 || known || older || read >= pending) break
    }
    deps.logger.debug({ resource: resource.name, pending, read }, 'caught up by index')
  }

  return {
    async worthIt(resource) {
      if (!resource.webhookModel || !('updated_at' in resource.columns)) return false
      return (await backlog(resource, deps.minBacklog)).pending >= deps.minBacklog
    },
    join(resource) {
      const current = flights.get(resource.name)
      if (current) return current
      const reader = deps.reader(resource)
      if (!reader) return Promise.resolve()
      const wait = (lastStart.get(resource.name) ?? 0) + FLIGHT_SPACING_MS - Date.now()
      const flight = (async () => {
        if (wait > 0) await pause(wait)
        lastStart.set(resource.name, Date.now())
        await walk(resource, reader)
      })().finally(() => flights.delete(resource.name))
      flights.set(resource.name, flight)
      return flight
    },
    running: running.start,
  }
}
