// Refresh of one record: `show` with the resource's includes, then apply; 404 tombstones it. A
// refresh is skipped when the row was written from a request sent after the record's latest delivery
// arrived (and after the activity feed's page that asked for it, for a refresh the feed queued), or
// when a full sweep of the resource that started since is running: that answer already holds (or the
// sweep will read) every change the deliveries told of (a burst of deliveries that
// trickles in while a refresh waits for the request budget costs one request, not two). While many
// refreshes of a resource wait, the newest page of its index answers them together (catch-up.ts).
import type { Job } from 'pg-boss'
import { z } from 'zod'
import type { UpstreamClients } from '../../api-client/index.ts'
import { type Logger, withLogContext } from '../../log.ts'
import { type AnyResource, findResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { countRecentDeliveries, latestDeliveryAgeMs, latestDeliveryAt } from '../../store/inbox.ts'
import { readFetchedAt } from '../../store/record-times.ts'
import { tombstone, upsertRecords } from '../../store/records.ts'
import { fullSweepRunning, fullSweepRunningSince } from '../../store/runs.ts'
import { recordJobContext } from '../job-log-context.ts'
import type { QueueRecordChecks, RefreshJob } from '../job-queue.ts'
import type { CatchUp } from './catch-up.ts'
import { checkDependants } from './dependant-checks.ts'

const refreshJob = z.object({
  resource: z.string(),
  id: z.number().int().positive(),
  // Only for the freshness metric: absent from older jobs, and never a reason to drop one.
  receivedAt: z.iso.datetime({ offset: true }).optional().catch(undefined),
  // A change known to be upstream by then (the activity feed read it): an earlier fetch does not answer it.
  askedAt: z.iso.datetime({ offset: true }).optional().catch(undefined),
  cascade: z.boolean().optional().catch(undefined),
})

export interface RefreshHandlerDeps {
  db: Db
  clients: UpstreamClients
  logger: Logger
  /** Checks of the dependants of a record found gone (its tasks, its bookings). */
  queueChecks: QueueRecordChecks
  /** `receivedAt`: when the delivery that asked for the refresh arrived, when the job says so. */
  onApplied?: (resource: string, source: 'fetch' | 'tombstone', receivedAt?: Date) => void
  onSkipped?: (resource: string) => void
  /** How long a refresh waits for its record to go quiet first (see `awaitQuiet`). */
  quiet?: QuietOptions
  /** Reads the newest page of the index instead, while refreshes of the resource queue up (catch-up.ts). */
  catchUp?: CatchUp
  /** Queues the job again for later: a cascade check put off while a full sweep of its resource runs. */
  defer?: (job: RefreshJob) => Promise<void>
}

export interface QuietOptions {
  /** No delivery of the record for this long: quiet. 0 turns the wait off. */
  quietMs: number
  /** The wait ends after this long, quiet or not. */
  maxWaitMs: number
  /**
   * When at least `deliveries` deliveries arrived in the last `windowMs` (more than the request
   * budget serves in its window), the record must be quiet for `quietMs` of this instead.
   */
  pressure: { windowMs: number; deliveries: number; quietMs: number }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits until the record has had no delivery for a while. The deliveries of a burst trickle in over
 * seconds, and one fetch after the last of them answers all. While deliveries arrive faster than the
 * request budget could fetch their records, fetches wait for the budget anyway, and the record must
 * be quiet for longer: that spends the budget on records that have stopped changing.
 */
async function awaitQuiet(db: Db, model: string, id: number, options: QuietOptions) {
  if (options.quietMs <= 0) return
  const deadline = Date.now() + options.maxWaitMs
  const { pressure } = options
  for (;;) {
    const age = await latestDeliveryAgeMs(db, model, id)
    const left = deadline - Date.now()
    if (age === null || left <= 0) return
    let needed = options.quietMs
    if (age >= needed && (await countRecentDeliveries(db, pressure.windowMs)) >= pressure.deliveries) {
      needed = pressure.quietMs
    }
    if (age >= needed) return
    await pause(Math.min(needed - age, left))
  }
}

/**
 * Whether a fetch sent after the record's latest delivery arrived (both on PostgreSQL's clock), and after
 * `askedAt` when the job gives one (the activity feed's page), wrote the row.
 */
async function answeredAlready(
  db: Db,
  model: string | null,
  resource: AnyResource,
  id: number,
  askedAt?: Date,
) {
  if (!model && !askedAt) return false
  const [delivered, fetched] = await Promise.all([
    model ? latestDeliveryAt(db, model, id) : null,
    readFetchedAt(db, resource, id),
  ])
  const asked = Math.max(delivered?.getTime() ?? 0, askedAt?.getTime() ?? 0)
  if (asked === 0) return false
  if (fetched !== null && fetched.getTime() >= asked) return true
  // A full sweep that started after the change reads the record (or reconciles it away) anyway: a
  // refresh would spend the budget that the full sweep needs. Should that sweep fail, the next
  // incremental one reads the change (its watermark is older than the change).
  return fullSweepRunningSince(db, resource.name, new Date(asked))
}

export function createRefreshHandler(deps: RefreshHandlerDeps) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      await withLogContext(recordJobContext(job), () => refresh(deps, job))
    }
  }
}

async function refresh(
  { db, clients, logger, onApplied, onSkipped, quiet, queueChecks, catchUp, defer }: RefreshHandlerDeps,
  job: Job<unknown>,
) {
  const parsed = refreshJob.safeParse(job.data)
  const resource = parsed.success ? findResource(parsed.data.resource) : undefined
  if (!parsed.success || !resource?.routes.show) {
    logger.error({ data: job.data }, 'refresh job for nothing crm-sync can fetch; dropped')
    return
  }
  const client = resource.service === 'crm' ? clients.crm : clients.reservation
  if (!client) return // the reservation service is no longer configured
  const { id, receivedAt } = parsed.data
  const askedAt = parsed.data.askedAt ? new Date(parsed.data.askedAt) : undefined
  const skip = async () => {
    if (!(await answeredAlready(db, resource.webhookModel, resource, id, askedAt))) return false
    onSkipped?.(resource.name)
    logger.debug('refresh skipped: a later fetch already answered it')
    return true
  }
  // A page or fetch may have answered it while it was queued: then it costs nothing, not even a walk.
  if ((catchUp || defer) && (await skip())) return
  if (parsed.data.cascade && defer && (await fullSweepRunning(db, resource.name))) {
    // That sweep reconciles the record, with a show, when its parent's deletion took it before the sweep
    // read its page; checked now, it would cost a second show. Afterwards, a row the sweep tombstoned or
    // read after the check was asked is answered, and only the others are fetched.
    await defer(parsed.data)
    logger.debug('cascade check put off until the full sweep of its resource ends')
    return
  }
  if (catchUp && (await catchUp.worthIt(resource))) {
    // The walk in flight may have sent its request before this delivery arrived: then the next one.
    for (let round = 0; round < 2; round++) {
      await catchUp.join(resource)
      if (await skip()) return
    }
  } else if (quiet && resource.webhookModel) await awaitQuiet(db, resource.webhookModel, id, quiet)
  if (await skip()) return
  // Upstream failures throw: pg-boss retries the job with backoff.
  const result = await client.show(resource, id)
  if (result.status === 'found') {
    await upsertRecords(db, resource, [result.record], { source: 'fetch', fetchedAt: result.fetchedAt })
  } else {
    await db.transaction().execute(async (trx) => {
      const tombstoned = await tombstone(trx, resource, [id], result.fetchedAt, { fetched: true })
      await checkDependants(trx, queueChecks, resource, tombstoned)
    })
  }
  onApplied?.(
    resource.name,
    result.status === 'found' ? 'fetch' : 'tombstone',
    receivedAt ? new Date(receivedAt) : undefined,
  )
  logger.debug({ status: result.status }, 'record refreshed')
}
