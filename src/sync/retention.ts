// Retention: shortly after start and then every 10 minutes, one replica (an advisory lock) deletes what
// has expired, batch by batch: deliveries applied more than INBOX_PROCESSED_RETENTION_DAYS ago, rejected
// and failed ones older than INBOX_REJECTED_RETENTION_DAYS, runs finished more than RUNS_RETENTION_DAYS
// ago, versions of records replaced more than HISTORY_RETENTION_DAYS ago (when set). Accepted deliveries,
// unfinished runs and current versions are never touched. Without it the inbox would keep every
// delivery (rejected bodies of up to 1 MiB included) for ever.
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { Db } from '../store/database.ts'
import {
  historyTables,
  type PruneBatch,
  type PruneCursor,
  type PrunedRows,
  pruneHistoryBatch,
  pruneInboxBatch,
  pruneRunsBatch,
  withRetentionLock,
} from '../store/retention.ts'
import type { SyncObserver } from './observer.ts'

export type RetentionSettings = Config['retention']

export interface RetentionDeps {
  db: Db
  retention: RetentionSettings
  logger: Logger
  observer?: SyncObserver
  /** Rows per statement, in place of each target's own (tests). */
  batchSize?: number
}

interface Target {
  days: (settings: RetentionSettings) => number | null
  /** Rows per statement: small enough for a short transaction. */
  batchSize: number
  /** Deletes the oldest expired rows from `after` on (where the batch before stopped). */
  batch: (
    db: Db,
    olderThanDays: number,
    limit: number,
    after: PruneCursor,
  ) => Promise<PruneBatch<PruneCursor>>
}

/** The cursor of a table pruned oldest first. */
const time = (after: PruneCursor) => (after instanceof Date ? after : null)

const TARGETS: Target[] = [
  {
    days: (settings) => settings.inboxProcessedDays,
    batchSize: 1000,
    batch: (db, olderThanDays, limit, after) =>
      pruneInboxBatch(db, { statuses: ['processed'], olderThanDays, limit, after: time(after) }),
  },
  {
    days: (settings) => settings.inboxRejectedDays,
    // A rejected delivery keeps a body of up to 1 MiB: fewer of them keep a batch short.
    batchSize: 100,
    batch: (db, olderThanDays, limit, after) =>
      pruneInboxBatch(db, { statuses: ['rejected', 'failed'], olderThanDays, limit, after: time(after) }),
  },
  {
    days: (settings) => settings.runsDays,
    // Each run takes its sweeps along, one per resource.
    batchSize: 200,
    batch: (db, olderThanDays, limit, after) =>
      pruneRunsBatch(db, { olderThanDays, limit, after: time(after) }),
  },
  ...historyTables.map(
    (table): Target => ({
      days: (settings) => settings.historyDays,
      // Versions read, of which those replaced are deleted: one probe of the index each.
      batchSize: 5000,
      batch: (db, olderThanDays, limit, after) =>
        pruneHistoryBatch(db, { table, olderThanDays, limit, after }),
    }),
  ),
]

/** What one pass deleted, per table and status (tables and statuses with nothing deleted left out). */
export type PruneResult = PrunedRows[]

function add(total: PrunedRows[], batch: PrunedRows[]) {
  for (const rows of batch) {
    const entry = total.find((row) => row.table === rows.table && row.status === rows.status)
    if (entry) entry.rows += rows.rows
    else total.push({ ...rows })
  }
}

/**
 * Deletes every expired row, one batch at a time until a batch comes back short, and logs what it
 * deleted. Null when another process is pruning (it holds the lock). Stops between batches once
 * `signal` is aborted.
 */
export async function pruneExpired(deps: RetentionDeps, signal?: AbortSignal): Promise<PruneResult | null> {
  const { db, retention, observer } = deps
  const total: PrunedRows[] = []
  try {
    const done = await withRetentionLock(db, async (connection) => {
      for (const target of TARGETS) {
        const days = target.days(retention)
        if (days === null) continue
        const limit = deps.batchSize ?? target.batchSize
        let after: PruneCursor = null
        for (;;) {
          if (signal?.aborted) return
          const batch = await target.batch(connection, days, limit, after)
          add(total, batch.pruned)
          for (const rows of batch.pruned) observer?.rowsPruned?.(rows.table, rows.status, rows.rows)
          if (!(batch.more ?? batch.deleted === limit)) break
          after = batch.after
        }
      }
    })
    return done === null ? null : total
  } finally {
    // Also when a batch failed: what the batches before it deleted is gone.
    if (total.length > 0) {
      const pruned = Object.fromEntries(total.map((rows) => [`${rows.table}.${rows.status}`, rows.rows]))
      deps.logger.info({ pruned }, 'pruned expired rows')
    }
  }
}

export interface RetentionOptions {
  /** The first pass, after start: once the start's own work is done. */
  firstDelayMs?: number
  intervalMs?: number
}

const FIRST_DELAY_MS = 60_000
const INTERVAL_MS = 10 * 60_000

/** Prunes shortly after start and then every 10 minutes, one pass at a time, until `stop`. */
export function startRetention(deps: RetentionDeps, options: RetentionOptions = {}) {
  const controller = new AbortController()
  let running: Promise<void> | undefined
  const pass = () => {
    if (running || controller.signal.aborted) return
    running = pruneExpired(deps, controller.signal)
      .then(() => {})
      .catch((error: unknown) => {
        // A batch that timed out or lost its connection is retried at the next pass.
        deps.logger.warn({ err: error }, 'could not prune expired rows')
      })
      .finally(() => {
        running = undefined
      })
  }
  const first = setTimeout(pass, options.firstDelayMs ?? FIRST_DELAY_MS).unref()
  const timer = setInterval(pass, options.intervalMs ?? INTERVAL_MS).unref()
  return {
    /** Stops the timers; a pass under way ends after its current batch. */
    async stop() {
      clearTimeout(first)
      clearInterval(timer)
      controller.abort()
      await running
    },
  }
}
