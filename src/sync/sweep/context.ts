// What the phases of one sweep share: the resource and its reader, the attempt's lease, progress
// written with the requests spent since the last write (checkpoint.ts: where it stands), the job's
// abort signal, and the errors that stop it.
import type { Kysely } from 'kysely'
import {
  createUpstreamMetrics,
  type RejectedRecordError,
  type ResourceReader,
} from '../../api-client/index.ts'
import { total } from '../../api-client/metrics.ts'
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
import type { SweepDeps, SweepSettings } from './deps.ts'
import { type TieOrders, tieOrders } from './tie-order.ts'

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
  /** Whether the upstream keeps the order of ties, as learnt so far (tie-order.ts). */
  tieOrders: TieOrders
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
  const { resource, signal } = options
  const clients = deps.openClients(spent, signal)
  const reader = resource.service === 'crm' ? clients.crm : clients.reservation
  if (!reader) throw new Error('the reservation service is not configured (RESERVATION_* are not set)')
  let saved = 0
  let records = options.claimed.records
  // Only an incremental sweep is ever marked to make way (store/runs/states.ts).
  let yielding = false
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
    tieOrders: deps.tieOrders ?? tieOrders(),
    rejected: [],
    async save(db, progress) {
      const apiRequests = unsavedRequests()
      const { makeWay } = await saveSweepProgress(db, options.key, { ...progress, apiRequests })
      saved += apiRequests
      records += progress.records ?? 0
      if (makeWay) yielding = true
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
