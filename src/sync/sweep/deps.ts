// What the sweep handler is given: its settings mapped from the configuration, the upstream clients a
// sweep opens (each counting its own requests beside the process's), and where the jobs it starts go.
import { createUpstreamClients, type UpstreamClients, type UpstreamMetrics } from '../../api-client/index.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import type { Db } from '../../store/database.ts'
import type { EnqueueSweep } from '../../store/runs.ts'
import type { QueueRecordChecks } from '../job-queue.ts'
import type { SyncObserver } from '../observer.ts'
import type { VerificationSettings } from '../plan/verification.ts'
import type { RelayRunEnd } from './run-end.ts'
import { type TieOrders, tieOrders } from './tie-order.ts'

export interface SweepSettings {
  /** Seconds subtracted from a successful sweep's start to make the next incremental's watermark. */
  lookbackSeconds: number
  /** Pages one walk fetches at most (10,000; src/config/fixed.ts). */
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
   * opens its own, so that its run can say how many requests it cost; once `signal` (its job's) is
   * aborted, they cut off the request in flight and send no other.
   */
  openClients(spent: UpstreamMetrics, signal?: AbortSignal): UpstreamClients
  settings: SweepSettings
  /** Sends the job of the sweep that waits for this one's resource, in the transaction that ends it. */
  enqueue: EnqueueSweep
  /** Checks of the dependants of records found gone (see sync/refresh/dependant-checks.ts). */
  queueChecks: QueueRecordChecks
  /** Told about records written and runs ended (for /metrics). */
  observer?: SyncObserver
  /** A command's: hands a run its sweep ended on to the service's log (sync/run-report.ts). */
  relay?: RelayRunEnd
  /** What the process has learnt of each resource's order of ties (tie-order.ts); a sweep's own without. */
  tieOrders?: TieOrders
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
    relay?: RelayRunEnd
  },
): SweepDeps {
  return {
    db: deps.db,
    logger: deps.logger,
    enqueue: deps.enqueue,
    queueChecks: deps.queueChecks,
    observer: deps.observer,
    relay: deps.relay,
    tieOrders: tieOrders(),
    openClients: (spent, signal) =>
      createUpstreamClients(config, {
        db: deps.db,
        logger: deps.logger,
        metrics: teeMetrics(deps.metrics, spent),
        signal,
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
