// What the phases of one sweep share: the resource and its reader, the attempt's lease, progress
// written with the requests spent since the last write, the job's abort signal, and the checkpoint
// a retried job resumes from.
import type { Kysely } from 'kysely'
import { z } from 'zod'
import {
  createUpstreamClients,
  createUpstreamMetrics,
  type RejectedRecordError,
  type ResourceReader,
  type UpstreamClients,
  type UpstreamMetrics,
} from '../../api-client/index.ts'
import { total } from '../../api-client/metrics.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import type { AnyResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import {
  type ClaimedSweep,
  type EnqueueSweep,
  type SweepKey,
  type SweepProgress,
  saveSweepProgress,
} from '../../store/runs.ts'
import type { Database } from '../../store/schema.ts'
import type { QueueRecordChecks } from '../job-queue.ts'
import type { SyncObserver } from '../observer.ts'
import type { VerificationSettings } from '../plan/verification.ts'

export interface SweepSettings {
  /** Seconds subtracted from a successful sweep's start to make the next incremental's watermark. */
  lookbackSeconds: number
  /** Pages one walk fetches at most (10,000; config: TUNING). */
  maxPages: number
  /** Unseen rows listed, checked with `show` and written per batch (and checkpoint). */
  reconcileBatchSize: number
  /**
   * Connections a walk writes its pages on at once (default 1). Pages still commit in order, each with
   * its checkpoint; more than one lets PostgreSQL write a page on another core while the last commits.
   */
  applyConnections?: number
  /** When incremental sweeps verify what their newest pages cannot show (plan/verification.ts). */
  verification: VerificationSettings
  /** ACTIVITY_POLL_SECONDS (0: the feed is off): see plan/sweep.ts. */
  feedPollSeconds?: number
}

export interface SweepDeps {
  db: Db
  logger: Logger
  /**
   * Upstream clients whose every attempt, retries included, is also counted into `spent`: a sweep
   * opens its own, so that its run can say how many requests it cost.
   */
  openClients(spent: UpstreamMetrics): UpstreamClients
  settings: SweepSettings
  /** Sends the job of the sweep that waits for this one's resource, in the transaction that ends it. */
  enqueue: EnqueueSweep
  /** Checks of the dependants of records found gone (see sync/refresh/dependant-checks.ts). */
  queueChecks: QueueRecordChecks
  /** Told about records written and runs ended (for /metrics). */
  observer?: SyncObserver
}

/** The deps of the sweep handler from the configuration; `metrics` is the process's (for /metrics). */
export function sweepDepsFrom(
  config: Config,
  deps: {
    db: Db
    logger: Logger
    metrics: UpstreamMetrics
    enqueue: EnqueueSweep
    queueChecks: QueueRecordChecks
    observer?: SyncObserver
  },
): SweepDeps {
  return {
    db: deps.db,
    logger: deps.logger,
    enqueue: deps.enqueue,
    queueChecks: deps.queueChecks,
    observer: deps.observer,
    openClients: (spent) =>
      createUpstreamClients(config, {
        db: deps.db,
        logger: deps.logger,
        metrics: teeMetrics(deps.metrics, spent),
      }),
    settings: {
      lookbackSeconds: config.syncLookbackSeconds,
      maxPages: config.upstream.maxPages,
      reconcileBatchSize: 100,
      // Two: PostgreSQL writes a page on the second core while the previous one commits (bench apply).
      applyConnections: 2,
      verification: verificationSettings(config),
      feedPollSeconds: config.activityPollSeconds,
    },
  }
}

// Public clients of the CRM page by 250 and its current document says so: a page may hold no more.
const PRACTICAL_PAGE_SIZE = 250

export function verificationSettings(config: Config): VerificationSettings {
  const upstream = (limits: { requests: number; windowSeconds: number; pageSize: number }) => ({
    requestsPerSecond: limits.requests / limits.windowSeconds,
    pageSize: Math.min(limits.pageSize, PRACTICAL_PAGE_SIZE),
  })
  return {
    intervalSeconds: config.incrementalSyncIntervalSeconds,
    budgetShare: config.reconcileBudgetPercent / 100,
    upstreams: { crm: upstream(config.upstream.crm), reservation: upstream(config.upstream.reservation) },
    mirrored: config.resources,
  }
}

/** Counters that add to both; samples come from `shared`, as does the state of authorization. */
export function teeMetrics(shared: UpstreamMetrics, local: UpstreamMetrics): UpstreamMetrics {
  const tee = (name: Exclude<keyof UpstreamMetrics, 'authFailures'>) => ({
    add: (labels: Record<string, string>, amount?: number) => {
      shared[name].add(labels, amount)
      local[name].add(labels, amount)
    },
    samples: () => shared[name].samples(),
  })
  return {
    requests: tee('requests'),
    retries: tee('retries'),
    throttledSeconds: tee('throttledSeconds'),
    budgetNarrowed: tee('budgetNarrowed'),
    authFailures: shared.authFailures,
  }
}

const walkCheckpoint = z.object({
  phase: z.literal('walk'),
  /** The next page to fetch; the pages before it are applied. */
  nextPage: z.number().int().min(1),
  /** An incremental walk stops after a page entirely older than this; null walks to the end. */
  watermark: z.iso.datetime({ offset: true }).nullable(),
  /** The group of ties the last page applied ended in, which the next page may go on (ties.ts). */
  tie: z
    .object({
      time: z.number(),
      startPage: z.number().int().min(1),
      startIndex: z.number().int().min(0),
      endPage: z.number().int().min(1),
      positions: z.number().int().min(1),
      ids: z.array(z.union([z.number(), z.string()])),
      pageSize: z.number().int().min(1),
    })
    .optional(),
})
const reconcileCheckpoint = z.object({
  phase: z.literal('reconcile'),
  /** Unseen rows up to this id are settled: a number, or a string where ids are text (attachments). */
  afterId: z.union([z.number().int().min(0), z.string()]),
})
// Stored as jsonb by one version of the code and read by a later one: parsed, never trusted.
const checkpointSchema = z.discriminatedUnion('phase', [walkCheckpoint, reconcileCheckpoint])

export type WalkCheckpoint = z.infer<typeof walkCheckpoint>
export type ReconcileCheckpoint = z.infer<typeof reconcileCheckpoint>
export type Checkpoint = z.infer<typeof checkpointSchema>

/** An earlier attempt's checkpoint, or null when there is none or it cannot be read (start over). */
export function parseCheckpoint(value: unknown): Checkpoint | null {
  const parsed = checkpointSchema.safeParse(value)
  return parsed.success ? parsed.data : null
}

/** The job was aborted (shutdown, lost claim): stop at once and leave the checkpoint to a retry. */
export class SweepInterrupted extends Error {
  override name = 'SweepInterrupted'
}

/** An incremental sweep makes way for a full sweep of its resource that waits for it. */
export class SweepYielded extends Error {
  override name = 'SweepYielded'
}

export interface SweepContext {
  db: Db
  logger: Logger
  resource: AnyResource
  reader: ResourceReader
  /** The upstream count of the resource, where it has one. */
  count: (() => Promise<number>) | null
  key: SweepKey
  /** When the sweep first started (PostgreSQL's clock), whichever attempt this is. */
  startedAt: Date
  settings: SweepSettings
  /** Records the upstream sent that the sync cannot use; the sweep ends failed when there are any. */
  rejected: RejectedRecordError[]
  /** See SweepDeps. */
  enqueue: EnqueueSweep
  queueChecks: QueueRecordChecks
  /** Adds progress, with the requests spent since the last save. */
  save(db: Kysely<Database>, progress: SweepProgress): Promise<void>
  /** Requests spent and not yet saved. */
  unsavedRequests(): number
  /** Records fetched by the sweep's walk, earlier attempts included. */
  recordsFetched(): number
  /** Throws SweepInterrupted once the job's signal is aborted. */
  checkAbort(): void
  /**
   * checkAbort, and throws SweepYielded once an incremental sweep learnt (at its last save) that a full
   * sweep of its resource waits for it: called between pages and between reconciled batches.
   */
  checkStop(): void
  /** Whether the sweep is to stop (aborted, or yielding): the walk sends no further request then. */
  aborted(): boolean
  /** Reports records written (after their transaction committed). */
  applied(source: 'fetch' | 'tombstone', count: number): void
}

export function openSweep(
  deps: SweepDeps,
  options: { resource: AnyResource; key: SweepKey; claimed: ClaimedSweep; signal: AbortSignal },
): SweepContext {
  const spent = createUpstreamMetrics()
  const clients = deps.openClients(spent)
  const { resource, signal } = options
  const reader = resource.service === 'crm' ? clients.crm : clients.reservation
  if (!reader) throw new Error('the reservation service is not configured (RESERVATION_* are not set)')
  let saved = 0
  let records = options.claimed.records
  // Only an incremental sweep makes way: a full one is what the waiting sweep would do.
  let yielding = false
  const incremental = options.claimed.mode === 'incremental'
  const unsavedRequests = () => total(spent.requests) - saved
  const checkAbort = () => {
    if (signal.aborted) throw new SweepInterrupted(`${resource.name}: the job was aborted`)
  }
  return {
    db: deps.db,
    logger: deps.logger.child({ resource: resource.name, runId: options.key.runId }),
    resource,
    reader,
    count: resource.service === 'crm' && resource.routes.count ? () => clients.crm.count(resource) : null,
    key: options.key,
    startedAt: options.claimed.startedAt,
    settings: deps.settings,
    enqueue: deps.enqueue,
    queueChecks: deps.queueChecks,
    rejected: [],
    async save(db, progress) {
      const apiRequests = unsavedRequests()
      const { fullWaiting } = await saveSweepProgress(db, options.key, { ...progress, apiRequests })
      saved += apiRequests
      records += progress.records ?? 0
      if (fullWaiting && incremental) yielding = true
    },
    unsavedRequests,
    recordsFetched: () => records,
    checkAbort,
    checkStop() {
      checkAbort()
      if (yielding) throw new SweepYielded(`${resource.name}: a full sweep waits for it`)
    },
    aborted: () => signal.aborted || yielding,
    applied(source, count) {
      if (count > 0) deps.observer?.recordsApplied?.(resource.name, source, count)
    },
  }
}
