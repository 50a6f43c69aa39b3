// Deliveries taken from the inbox, applied together in one transaction: `destroy` tombstones; an
// `api` or `nested` payload that carries every include the mirror needs is applied as it is;
// anything else queues a refresh of the record, one per record however many deliveries ask for it.
import type { Kysely } from 'kysely'
import type { Logger } from '../../log.ts'
import { type AnyResource, type RecordId, resourceByWebhookModel } from '../../resources/index.ts'
import type { InboxRow } from '../../store/inbox.ts'
import { markDeliveriesProcessed } from '../../store/inbox.ts'
import { lockUpdatedAts } from '../../store/record-times.ts'
import {
  InvalidRecordError,
  judgePayloads,
  tombstone,
  type UpstreamRecord,
  upsertRecords,
} from '../../store/records.ts'
import type { Database } from '../../store/schema.ts'
import { enqueueRefresh, type JobQueue, recordChecks } from '../job-queue.ts'
import { checkDependants } from '../refresh/dependant-checks.ts'

export interface DeliveryDeps {
  boss: JobQueue
  logger: Logger
  /** See `enqueueRefresh`. */
  refreshCoalesceSeconds: number
  /** The resources mirrored (MIRROR_RESOURCES): deliveries about others are ignored; none if not given. */
  mirrored?: ReadonlySet<string>
}

/** A delivery whose record is now in the mirror, for the freshness metric. */
export interface AppliedDelivery {
  resource: string
  source: 'payload' | 'tombstone'
  receivedAt: Date
}

export interface DeliveryOutcome {
  applied: AppliedDelivery[]
  /** Refreshes queued, and refreshes a queued one already covers. */
  refreshes: { queued: number; coalesced: number }
  /** Deliveries for models crm-sync does not mirror. */
  ignored: number
}

const isObject = (value: unknown): value is UpstreamRecord =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The record an `api` or `nested` body carries, if it carries every include of the resource. */
function completeRecord(resource: AnyResource, row: InboxRow): UpstreamRecord | null {
  const { payload, shape, model } = row
  if (!isObject(payload)) return null
  const record = shape === 'nested' ? payload.record : shape === 'api' ? payload[model ?? ''] : null
  if (!isObject(record)) return null
  return resource.includes.every((key) => key in record) ? record : null
}

interface RecordWork {
  /** Every delivery of the record in the batch, in order of arrival. */
  rows: InboxRow[]
  payloads: { row: InboxRow; record: UpstreamRecord }[]
  destroys: InboxRow[]
  /** The first delivery that needs the record fetched, if any does. */
  refreshFor?: InboxRow
}

/**
 * Applies the payloads of one resource; `current` holds the `updated_at` of its rows, locked. Which
 * payload is written, and whether its record is fetched as well (`refreshFor`), is the rule's
 * (`judgePayloads`, store/records/which-wins.ts).
 */
async function applyPayloads(
  trx: Kysely<Database>,
  resource: AnyResource,
  work: Map<number, RecordWork>,
  current: Map<number, Date | null>,
  applied: AppliedDelivery[],
): Promise<void> {
  const withPayloads = [...work].filter(([, entry]) => entry.payloads.length > 0)
  if (withPayloads.length === 0) return
  const chosen: { id: number; record: UpstreamRecord; entry: RecordWork }[] = []
  for (const [id, entry] of withPayloads) {
    const verdict = judgePayloads(
      entry.payloads.map(({ record }) => record.updated_at),
      current.get(id),
      Date.now(),
    )
    if (verdict.fetch !== null) entry.refreshFor ??= entry.payloads[verdict.fetch]?.row
    const trusted = verdict.apply === null ? undefined : entry.payloads[verdict.apply]
    if (trusted) chosen.push({ id, record: trusted.record, entry })
  }
  const inserted = new Set<RecordId>()
  try {
    const result = await upsertRecords(
      trx,
      resource,
      chosen.map(({ record }) => record),
      { source: 'payload' },
    )
    for (const id of result.inserted) inserted.add(id)
  } catch (error) {
    if (!(error instanceof InvalidRecordError)) throw error
    // A payload the store cannot use (checked before anything is written): each is tried alone, and
    // the records of unusable ones are fetched instead.
    for (const { record, entry } of chosen) {
      try {
        const result = await upsertRecords(trx, resource, [record], { source: 'payload' })
        for (const id of result.inserted) inserted.add(id)
      } catch (inner) {
        if (!(inner instanceof InvalidRecordError)) throw inner
        entry.refreshFor ??= entry.payloads[0]?.row
        entry.payloads = []
      }
    }
  }
  // No row was there to lock, yet the insert met one: another writer (a batch, a refresh, a sweep)
  // created the record meanwhile, in a second this payload may share. A fetch settles which is last.
  for (const { id, entry } of chosen) {
    if (!current.has(id) && entry.payloads.length > 0 && !inserted.has(id)) {
      entry.refreshFor ??= entry.payloads.at(-1)?.row
    }
  }
  for (const { entry } of chosen) {
    for (const { row } of entry.payloads) {
      applied.push({ resource: resource.name, source: 'payload', receivedAt: row.received_at })
    }
  }
}

function logDelivery(logger: Logger, resource: AnyResource, row: InboxRow, outcome: unknown[]) {
  const context = { inboxId: row.id, model: row.model, resource: resource.name, recordId: row.record_id }
  logger.debug({ ...context, outcome: outcome.join(', ') }, 'delivery processed')
}

/** Applies `rows` (taken from the inbox and locked by `trx`) and marks them processed. */
export async function applyDeliveries(
  trx: Kysely<Database>,
  rows: InboxRow[],
  { boss, logger, refreshCoalesceSeconds, mirrored }: DeliveryDeps,
): Promise<DeliveryOutcome> {
  const outcome: DeliveryOutcome = { applied: [], refreshes: { queued: 0, coalesced: 0 }, ignored: 0 }
  const byResource = new Map<AnyResource, Map<number, RecordWork>>()
  for (const row of [...rows].sort((a, b) => a.id - b.id)) {
    const known = row.model ? resourceByWebhookModel(row.model) : undefined
    const resource = known && (mirrored?.has(known.name) ?? true) ? known : undefined
    if (!resource || row.record_id === null) {
      logger.warn(
        { inboxId: row.id, model: row.model },
        'delivery for nothing crm-sync mirrors; marked processed',
      )
      outcome.ignored++
      continue
    }
    const work = byResource.get(resource) ?? new Map<number, RecordWork>()
    byResource.set(resource, work)
    const entry = work.get(row.record_id) ?? { rows: [], payloads: [], destroys: [] }
    work.set(row.record_id, entry)
    entry.rows.push(row)
    if (row.event === 'destroy') {
      entry.destroys.push(row)
      continue
    }
    const record = completeRecord(resource, row)
    if (record) entry.payloads.push({ row, record })
    else entry.refreshFor ??= row
  }

  // Rows are locked in one order by every writer (resource by resource, ids ascending), so that two
  // batches, or a batch and a sweep, never wait for each other in a circle.
  const ordered = [...byResource]
    .sort(([a], [b]) => a.name.localeCompare(b.name))
    .map(([resource, work]) => [resource, new Map([...work].sort(([a], [b]) => a - b))] as const)
  for (const [resource, work] of ordered) {
    const current = await lockUpdatedAts(trx, resource, [...work.keys()])
    await applyPayloads(trx, resource, work, current, outcome.applied)
    // A destroy wins over any payload, whatever the order: the upstream does not bring ids back.
    const tombstoned: number[] = []
    for (const [id, entry] of work) {
      for (const row of entry.destroys) {
        tombstoned.push(...(await tombstone(trx, resource, [id], row.received_at)))
        outcome.applied.push({ resource: resource.name, source: 'tombstone', receivedAt: row.received_at })
      }
    }
    await checkDependants(trx, recordChecks(boss, refreshCoalesceSeconds, mirrored), resource, tombstoned)
    for (const [id, entry] of work) {
      let refresh: 'refresh queued' | 'refresh coalesced' | undefined
      if (entry.refreshFor) {
        // The delivery's arrival travels with the refresh, so that its freshness can be measured.
        const job = { resource: resource.name, id, receivedAt: entry.refreshFor.received_at.toISOString() }
        refresh = (await enqueueRefresh(boss, trx, job, refreshCoalesceSeconds))
          ? 'refresh queued'
          : 'refresh coalesced'
        if (refresh === 'refresh queued') outcome.refreshes.queued++
        else outcome.refreshes.coalesced++
      }
      if (logger.isLevelEnabled('debug')) {
        const outcomes = [
          entry.payloads.length ? 'payload' : undefined,
          entry.destroys.length ? 'tombstone' : undefined,
          refresh,
        ].filter(Boolean)
        for (const row of entry.rows) logDelivery(logger, resource, row, outcomes)
      }
    }
  }
  await markDeliveriesProcessed(
    trx,
    rows.map((row) => row.id),
  )
  return outcome
}
