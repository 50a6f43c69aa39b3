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
} from '../api-client/index.ts'
import { total } from '../api-client/metrics.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { AnyResource } from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import { type ClaimedSweep, type SweepKey, type SweepProgress, saveSweepProgress } from '../store/runs.ts'
import type { Database } from '../store/schema.ts'
import type { SyncObserver } from './observer.ts'

export interface SweepSettings {
  /** Seconds subtracted from a successful sweep's start to make the next incremental's watermark. */
  lookbackSeconds: number
  /** Pages one walk fetches at most (UPSTREAM_MAX_PAGES). */
  maxPages: number
  /** Unseen rows listed, checked with `show` and written per batch (and checkpoint). */
  reconcileBatchSize: number
  /**
   * Connections a walk writes its pages on at once (default 1). Pages still commit in order, each with
   * its checkpoint; more than one lets PostgreSQL write a page on another core while the last commits.
   */
  applyConnections?: number
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
  /** Told about records written and runs ended (for /metrics). */
  observer?: SyncObserver
}

/** The deps of the sweep handler from the configuration; `metrics` is the process's (for /metrics). */
export function sweepDepsFrom(
  config: Config,
  deps: { db: Db; logger: Logger; metrics: UpstreamMetrics; observer?: SyncObserver },
): SweepDeps {
  return {
    db: deps.db,
    logger: deps.logger,
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
    },
  }
}

/** Counters that add to both; samples come from `shared`. */
export function teeMetrics(shared: UpstreamMetrics, local: UpstreamMetrics): UpstreamMetrics {
  const tee = (name: keyof UpstreamMetrics) => ({
    add: (labels: Record<string, string>, amount?: number) => {
      shared[name].add(labels, amount)
      local[name].add(labels, amount)
    },
    samples: () => shared[name].samples(),
  })
  return { requests: tee('requests'), retries: tee('retries'), throttledSeconds: tee('throttledSeconds') }
}

const walkCheckpoint = z.object({
  phase: z.literal('walk'),
  /** The next page to fetch; the pages before it are applied. */
  nextPage: z.number().int().min(1),
  /** An incremental walk stops after a page entirely older than this; null walks to the end. */
  watermark: z.iso.datetime({ offset: true }).nullable(),
})
const reconcileCheckpoint = z.object({
  phase: z.literal('reconcile'),
  /** Unseen rows up to this id are settled. */
  afterId: z.number().int().min(0),
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
  /** Adds progress, with the requests spent since the last save. */
  save(db: Kysely<Database>, progress: SweepProgress): Promise<void>
  /** Requests spent and not yet saved. */
  unsavedRequests(): number
  /** Records fetched by the sweep's walk, earlier attempts included. */
  recordsFetched(): number
  /** Throws SweepInterrupted once the job's signal is aborted. */
  checkAbort(): void
  /** Whether the job's signal is aborted (the walk sends no further request then). */
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
  const unsavedRequests = () => total(spent.requests) - saved
  return {
    db: deps.db,
    logger: deps.logger.child({ resource: resource.name, runId: options.key.runId }),
    resource,
    reader,
    count: resource.service === 'crm' && resource.routes.count ? () => clients.crm.count(resource) : null,
    key: options.key,
    startedAt: options.claimed.startedAt,
    settings: deps.settings,
    rejected: [],
    async save(db, progress) {
      const apiRequests = unsavedRequests()
      await saveSweepProgress(db, options.key, { ...progress, apiRequests })
      saved += apiRequests
      records += progress.records ?? 0
    },
    unsavedRequests,
    recordsFetched: () => records,
    checkAbort() {
      if (signal.aborted) throw new SweepInterrupted(`${resource.name}: the job was aborted`)
    },
    aborted: () => signal.aborted,
    applied(source, count) {
      if (count > 0) deps.observer?.recordsApplied?.(resource.name, source, count)
    },
  }
}
