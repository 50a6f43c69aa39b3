// Gauges read from the database at scrape time. A source that cannot be read (the database is down)
// drops its series rather than repeating old values, and counts the failure; the scrape still answers.
import { Counter, Gauge, type Registry } from 'prom-client'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import { collectDetailsStatus, collectQueueCounts, collectResourceCounts } from '../status/engine-status.ts'
import type { Db } from '../store/database.ts'
import { readInboxBacklog, readInboxBytes } from '../store/status-queries.ts'
import { readResourceStates } from '../store/sync-state.ts'
import type { JobQueue } from '../sync/job-queue.ts'
import { PREFIX } from './metric-prefix.ts'

export interface DatabaseSources {
  db: Db
  boss: JobQueue
  config: Config
  logger: Logger
  resourceCountsMaxAgeSeconds?: number
}

const DEFAULT_RESOURCE_COUNTS_MAX_AGE_SECONDS = 30

export function createDatabaseGauges(registers: Registry[], sources: DatabaseSources) {
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name: `${PREFIX}${name}`, help, labelNames, registers })

  const inboxDepth = gauge('inbox_depth', 'Webhook deliveries accepted and not yet applied')
  const inboxAge = gauge(
    'inbox_oldest_age_seconds',
    'Age of the oldest delivery accepted and not yet applied (0 when there is none)',
  )
  const inboxBytes = gauge(
    'inbox_bytes',
    'Bytes sync.inbox takes on disk (table, large bodies, indexes); space of pruned rows is reused, not returned',
  )
  const queueJobs = gauge(
    'queue_jobs',
    "Jobs per pg-boss queue and state (queued, active, failed), as pg-boss's monitor last counted them (cached for a few seconds)",
    ['queue', 'state'],
  )
  const liveRows = gauge('live_rows', 'Rows of the mirror table that are not tombstoned', ['resource'])
  const remoteCount = gauge('remote_count', 'Records the upstream counted at the last sweep that asked', [
    'resource',
  ])
  const drift = gauge('drift', 'Remote count minus live rows, per resource (0 when in sync)', ['resource'])
  const lastSuccess = gauge(
    'last_success_timestamp_seconds',
    'When the last sweep of the resource that succeeded ended, whichever process ran it (Unix seconds), by what it read: incremental (the newest pages) or full (every page)',
    ['resource', 'mode'],
  )
  const detailsCurrent = gauge(
    'details_current',
    "Live records whose details (a person's historic events and assistants) the details pass has read and that are not due",
    ['resource'],
  )
  const detailsDue = gauge(
    'details_due',
    'Live records whose details are due, by reason: new (never read), changed (since read), stale (read before the last full run began)',
    ['resource', 'reason'],
  )
  const failures = new Counter({
    name: `${PREFIX}scrape_source_failures_total`,
    help: 'Scrapes in which a source (inbox, queues, resources) could not be read',
    labelNames: ['source'],
    registers,
  })

  const maxAgeMs = (sources.resourceCountsMaxAgeSeconds ?? DEFAULT_RESOURCE_COUNTS_MAX_AGE_SECONDS) * 1000
  let countedAt = Number.NEGATIVE_INFINITY

  const readers: Record<string, { gauges: Gauge[]; read: () => Promise<void> }> = {
    inbox: {
      gauges: [inboxDepth, inboxAge, inboxBytes],
      async read() {
        const [backlog, bytes] = await Promise.all([readInboxBacklog(sources.db), readInboxBytes(sources.db)])
        inboxBytes.set(bytes)
        inboxDepth.set(backlog.depth)
        inboxAge.set(backlog.oldest ? Math.max(0, (Date.now() - backlog.oldest.getTime()) / 1000) : 0)
      },
    },
    queues: {
      gauges: [queueJobs],
      async read() {
        const queues = await collectQueueCounts(sources.boss)
        for (const [queue, counts] of Object.entries(queues)) {
          for (const state of ['queued', 'active', 'failed'] as const)
            queueJobs.set({ queue, state }, counts[state])
        }
      },
    },
    resources: {
      gauges: [liveRows, remoteCount, drift, detailsCurrent, detailsDue],
      async read() {
        if (Date.now() - countedAt < maxAgeMs) return
        const [counts, details] = await Promise.all([
          collectResourceCounts(sources.db, sources.config),
          collectDetailsStatus(sources.db, sources.config),
        ])
        for (const gauge of [liveRows, remoteCount, drift, detailsCurrent, detailsDue]) gauge.reset()
        for (const { resource, current, due } of details) {
          detailsCurrent.set({ resource }, current)
          for (const [reason, count] of Object.entries(due)) detailsDue.set({ resource, reason }, count)
        }
        for (const count of counts) {
          liveRows.set({ resource: count.resource }, count.liveRows)
          if (count.remoteCount !== null) remoteCount.set({ resource: count.resource }, count.remoteCount)
          if (count.drift !== null) drift.set({ resource: count.resource }, count.drift)
        }
        countedAt = Date.now()
      },
    },
    sweeps: {
      gauges: [lastSuccess],
      async read() {
        const states = await readResourceStates(sources.db)
        lastSuccess.reset()
        for (const state of states) {
          const { resource } = state
          if (state.last_incremental_sync_at)
            lastSuccess.set(
              { resource, mode: 'incremental' },
              state.last_incremental_sync_at.getTime() / 1000,
            )
          if (state.last_full_sync_at)
            lastSuccess.set({ resource, mode: 'full' }, state.last_full_sync_at.getTime() / 1000)
        }
      },
    },
  }

  return {
    async refresh(): Promise<void> {
      await Promise.all(
        Object.entries(readers).map(async ([source, reader]) => {
          try {
            await reader.read()
          } catch (error) {
            for (const gauge of reader.gauges) gauge.reset()
            if (source === 'resources') countedAt = Number.NEGATIVE_INFINITY
            failures.inc({ source })
            sources.logger.warn({ err: error, source }, 'a metrics source could not be read')
          }
        }),
      )
    },
  }
}
