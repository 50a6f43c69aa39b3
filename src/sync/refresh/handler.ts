// Refresh of one record: `show` with the resource's includes, then apply; 404 tombstones it. Before
// that, what the refresh does next is decided step by step in plan/refresh.ts: skip it (a later fetch
// or a full sweep answers it), put a cascade check off while a full sweep runs, join a catch-up walk
// of the newest page (catch-up.ts), or wait for the record to go quiet.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import type { ResourceReader, UpstreamClients } from '../../api-client/index.ts'
import { type Logger, withLogContext } from '../../log.ts'
import { type AnyResource, findResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { tombstone, upsertRecords } from '../../store/records.ts'
import { recordJobContext } from '../job-log-context.ts'
import type { QueueRecordChecks, RefreshJob } from '../job-queue.ts'
import { nextRefreshStep, type QuietOptions, type RefreshTarget, readRefreshFacts } from '../plan/refresh.ts'
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
  /** How long a refresh waits for its record to go quiet first (plan/refresh.ts). */
  quiet?: QuietOptions
  /** Reads the newest page of the index instead, while refreshes of the resource queue up (catch-up.ts). */
  catchUp?: CatchUp
  /** Queues the job again for later: a cascade check put off while a full sweep of its resource runs. */
  defer?: (job: RefreshJob) => Promise<void>
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function createRefreshHandler(deps: RefreshHandlerDeps) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      await withLogContext(recordJobContext(job), () => refresh(deps, job))
    }
  }
}

async function refresh(deps: RefreshHandlerDeps, job: Job<unknown>) {
  const parsed = refreshJob.safeParse(job.data)
  const resource = parsed.success ? findResource(parsed.data.resource) : undefined
  if (!parsed.success || !resource?.routes.show) {
    deps.logger.error({ data: job.data }, 'refresh job for nothing crm-sync can fetch; dropped')
    return
  }
  const client = resource.service === 'crm' ? deps.clients.crm : deps.clients.reservation
  if (!client) return // the reservation service is no longer configured
  // Counted among the refreshes of its resource that wait, until it ends (catch-up.ts).
  const done = deps.catchUp?.running(resource.name, parsed.data.receivedAt)
  try {
    await refreshRecord(deps, client, resource, parsed.data)
  } finally {
    done?.()
  }
}

async function refreshRecord(
  { db, logger, onApplied, onSkipped, quiet, queueChecks, catchUp, defer }: RefreshHandlerDeps,
  client: ResourceReader,
  resource: AnyResource,
  job: RefreshJob,
) {
  const { id, receivedAt } = job
  const target: RefreshTarget = {
    resource,
    id,
    askedAt: job.askedAt ? new Date(job.askedAt) : undefined,
    cascade: job.cascade === true,
  }
  const crowded = catchUp && ((of: AnyResource) => catchUp.worthIt(of))
  const sources = { db, quiet, defers: defer !== undefined, crowded }
  const started = Date.now()
  let joined = 0
  for (let steps = 0; ; steps++) {
    const facts = await readRefreshFacts(sources, target, { steps, joined, waitedMs: Date.now() - started })
    const step = nextRefreshStep(facts, quiet)
    if (step.do === 'fetch') break
    if (step.do === 'skip') {
      onSkipped?.(resource.name)
      logger.debug('refresh skipped: a later fetch already answered it')
      return
    }
    if (step.do === 'defer') {
      await defer?.(job)
      logger.debug('cascade check put off until the full sweep of its resource ends')
      return
    }
    if (step.do === 'join') {
      await catchUp?.join(resource)
      joined++
    } else await pause(step.ms)
  }
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
