// The Prometheus metrics of one process, in a registry of its own (never prom-client's global one,
// so that tests can build several apps). Three kinds of source:
//  - events counted as they happen: jobs, records applied, freshness, run durations, rows pruned
//    (SyncObserver);
//  - plain counters kept by the receiver and the API clients, copied in at each scrape;
//  - the database, read at each scrape: inbox depth and size, queue depth (cheap: an index, the
//    size of the inbox's files, pg-boss's cached counts), live rows and drift (a count(*) per mirror
//    table, so at most every `resourceCountsMaxAgeSeconds`).
import { readFileSync } from 'node:fs'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { UpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import type { HookObserver } from '../hooks/keeper.ts'
import type { Logger } from '../log.ts'
import type { ReceiverCounters } from '../receiver/counters.ts'
import type { Db } from '../store/database.ts'
import type { JobQueue } from '../sync/job-queue.ts'
import type { SyncObserver } from '../sync/observer.ts'
import { copyCounters } from './copied-counters.ts'
import { createDatabaseGauges } from './database-gauges.ts'
import { PREFIX } from './metric-prefix.ts'

export interface MetricsSources {
  db: Db
  boss: JobQueue
  config: Config
  logger: Logger
  /**
   * The receiver's counters: deliveries by model, event, shape and outcome, requests refused for their
   * secret, deliveries that carried the previous secret.
   */
  receiverCounters: ReceiverCounters
  upstream: UpstreamMetrics
  /** Live rows are counted at most this often (default 30 s); 0 counts at every scrape. */
  resourceCountsMaxAgeSeconds?: number
  /** Node's process metrics (CPU, memory, event loop, GC) under their usual names; default on. */
  processMetrics?: boolean
  /** The account of ACCOUNTS_FILE the metrics are of: an `account` label on every one of them. */
  account?: string | null
}

export interface Metrics extends Required<SyncObserver>, HookObserver {
  registry: Registry
  /** Reads the database and the plain counters into the registry. */
  collect(): Promise<void>
  /** Collects, then renders the text exposition format. */
  scrape(): Promise<string>
  contentType: string
}

/** The version of package.json, beside the sources in a clone and in the image. */
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version

// From a payload applied within a second to a refresh that waited out a rate-limit pause.
const FRESHNESS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600]
// From an incremental run of a quiet account to a full run of a large one under the request budget.
const RUN_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21_600]

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry()
  if (sources.account) registry.setDefaultLabels({ account: sources.account })
  if (sources.processMetrics ?? true) collectDefaultMetrics({ register: registry })
  const registers = [registry]

  const jobs = new Counter({
    name: `${PREFIX}jobs_total`,
    help: 'Jobs handled by this process, by kind (queue) and outcome (completed, or failed and left to a retry)',
    labelNames: ['kind', 'outcome'],
    registers,
  })
  const applied = new Counter({
    name: `${PREFIX}records_applied_total`,
    help: 'Records written to the mirror, by resource and source (payload, fetch, tombstone)',
    labelNames: ['resource', 'source'],
    registers,
  })
  const refreshesSkipped = new Counter({
    name: `${PREFIX}refreshes_skipped_total`,
    help: 'Record refreshes not sent because a fetch sent after the latest delivery of the record already answered them',
    labelNames: ['resource'],
    registers,
  })
  const detailsReads = new Counter({
    name: `${PREFIX}details_reads_total`,
    help: "Records whose details (a person's historic events and assistants) the details pass read in this process, by resource and outcome (read, gone: answered 404)",
    labelNames: ['resource', 'outcome'],
    registers,
  })
  const detailsRequests = new Counter({
    name: `${PREFIX}details_requests_total`,
    help: 'Upstream requests the details pass sent in this process, by resource',
    labelNames: ['resource'],
    registers,
  })
  const freshness = new Histogram({
    name: `${PREFIX}freshness_seconds`,
    help: 'Seconds from a webhook delivery being received to its record being written, by resource and source',
    labelNames: ['resource', 'source'],
    buckets: FRESHNESS_BUCKETS,
    registers,
  })
  const runDuration = new Histogram({
    name: `${PREFIX}run_duration_seconds`,
    help: 'Seconds from the start of a run to its end, by mode and outcome (counted by the process that ended it)',
    labelNames: ['mode', 'outcome'],
    buckets: RUN_BUCKETS,
    registers,
  })
  const pruned = new Counter({
    name: `${PREFIX}pruned_rows_total`,
    help: 'Expired rows deleted by retention in this process, by table (sync.inbox, sync.runs, sync.run_resources, history.*) and status',
    labelNames: ['table', 'status'],
    registers,
  })
  const hookChecks = new Counter({
    name: `${PREFIX}hook_checks_total`,
    help: 'Periodic checks of the CRM hooks run by this process, by outcome (ok, repaired, failed)',
    labelNames: ['outcome'],
    registers,
  })
  const hooksReregistered = new Counter({
    name: `${PREFIX}hooks_reregistered_total`,
    help: 'Hooks re-registered by the periodic checks of this process, by reason (missing, disabled, changed)',
    labelNames: ['reason'],
    registers,
  })
  new Gauge({
    name: `${PREFIX}build_info`,
    help: 'Always 1; the labels say which crm-sync and which Node run this process',
    labelNames: ['version', 'node'],
    registers,
  }).set({ version: VERSION, node: process.version }, 1)
  new Gauge({
    name: `${PREFIX}upstream_auth_failing`,
    help: 'Whether the last answer of the upstream to this process refused the API key (401 or 403): 1, else 0',
    labelNames: ['upstream'],
    registers,
    collect() {
      this.reset()
      for (const upstream of ['crm', 'reservation']) {
        this.set({ upstream }, sources.upstream.authFailures.has(upstream) ? 1 : 0)
      }
    },
  })
  // Present at 0 from the start, so that increase() sees the first check that fails.
  for (const outcome of ['ok', 'repaired', 'failed']) hookChecks.inc({ outcome }, 0)
  for (const reason of ['missing', 'disabled', 'changed']) hooksReregistered.inc({ reason }, 0)
  const copy = copyCounters(registers, sources)
  const database = createDatabaseGauges(registers, sources)

  return {
    registry,
    contentType: registry.contentType,
    jobsDone(kind, outcome, count) {
      jobs.inc({ kind, outcome }, count)
    },
    recordsApplied(resource, source, count, receivedAt) {
      applied.inc({ resource, source }, count)
      if (receivedAt) {
        freshness.observe({ resource, source }, Math.max(0, (Date.now() - receivedAt.getTime()) / 1000))
      }
    },
    refreshSkipped(resource) {
      refreshesSkipped.inc({ resource })
    },
    detailsRead(resource, outcome) {
      detailsReads.inc({ resource, outcome: 'read' }, outcome.read - outcome.gone)
      detailsReads.inc({ resource, outcome: 'gone' }, outcome.gone)
      detailsRequests.inc({ resource }, outcome.requests)
    },
    runFinished(run) {
      const start = run.started_at ?? run.created_at
      if (!run.finished_at) return
      const seconds = Math.max(0, (run.finished_at.getTime() - start.getTime()) / 1000)
      runDuration.observe({ mode: run.mode, outcome: run.status }, seconds)
    },
    rowsPruned(table, status, count) {
      pruned.inc({ table, status }, count)
    },
    hookChecked(outcome) {
      hookChecks.inc({ outcome })
    },
    hooksReregistered(reason, count) {
      hooksReregistered.inc({ reason }, count)
    },
    async collect() {
      copy()
      await database.refresh()
    },
    async scrape() {
      copy()
      await database.refresh()
      return registry.metrics()
    },
  }
}
