// A webhook delivery from the inbox: `destroy` tombstones; an `api` or `nested` payload that carries
// every include the mirror needs is applied as it is; anything else queues a refresh of the record.
import type { Kysely } from 'kysely'
import type { Job } from 'pg-boss'
import { z } from 'zod'
import { type Logger, withLogContext } from '../../log.ts'
import { type AnyResource, resourceByWebhookModel } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { markDeliveryProcessed, readDelivery } from '../../store/inbox.ts'
import {
  InvalidRecordError,
  readUpdatedAt,
  tombstone,
  type UpstreamRecord,
  upsertRecords,
} from '../../store/records.ts'
import type { Database } from '../../store/schema.ts'
import { enqueueRefresh, type JobQueue } from '../job-queue.ts'

const deliveryJob = z.object({ inbox_id: z.number().int().positive() })

export interface DeliveryHandlerDeps {
  db: Db
  boss: JobQueue
  logger: Logger
  /** See `enqueueRefresh`. */
  refreshCoalesceSeconds: number
  /** Called once a delivery's record is in the mirror (payload applied or tombstoned). */
  onApplied?: (resource: string, source: 'payload' | 'tombstone', receivedAt: Date) => void
}

const isObject = (value: unknown): value is UpstreamRecord =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The record an `api` or `nested` body carries, if it carries every include of the resource. */
function completeRecord(resource: AnyResource, shape: string | null, model: string, payload: unknown) {
  if (!isObject(payload)) return null
  const record = shape === 'nested' ? payload.record : shape === 'api' ? payload[model] : null
  if (!isObject(record)) return null
  return resource.includes.every((key) => key in record) ? record : null
}

/**
 * Applies a payload; false when it cannot settle the record on its own. Timestamps have whole
 * seconds, so two payloads of one second cannot be ordered, and deliveries arrive in any order:
 * when the row already holds that same second, the record is fetched to settle which state is last.
 */
async function applyPayload(
  trx: Kysely<Database>,
  resource: AnyResource,
  record: UpstreamRecord,
): Promise<boolean> {
  try {
    const current = await readUpdatedAt(trx, resource, record)
    await upsertRecords(trx, resource, [record], { source: 'payload' })
    return current === null || current.getTime() !== Date.parse(String(record.updated_at))
  } catch (error) {
    if (error instanceof InvalidRecordError) return false // unusable payload: fetch the record instead
    throw error
  }
}

export function createDeliveryHandler(deps: DeliveryHandlerDeps) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) await withLogContext({ jobId: job.id }, () => handleDelivery(deps, job))
  }
}

async function handleDelivery(
  { db, boss, logger, refreshCoalesceSeconds, onApplied }: DeliveryHandlerDeps,
  job: Job<unknown>,
): Promise<void> {
  const parsed = deliveryJob.safeParse(job.data)
  if (!parsed.success) {
    logger.error({ data: job.data }, 'delivery job with an unusable payload; dropped')
    return
  }
  const row = await readDelivery(db, parsed.data.inbox_id)
  if (row?.status !== 'accepted' || row.record_id === null) return // processed before a retry
  const resource = row.model ? resourceByWebhookModel(row.model) : undefined
  const recordId = row.record_id
  // Every line from here on (the store's, the queue's) names the record.
  const context = { inboxId: row.id, model: row.model, resource: resource?.name, recordId }
  await withLogContext(context, async () => {
    if (!resource) {
      logger.warn('delivery for a model crm-sync does not mirror; marked processed')
      await markDeliveryProcessed(db, row.id)
      return
    }
    const outcome = await db.transaction().execute(async (trx) => {
      if (row.event === 'destroy') {
        await tombstone(trx, resource, [recordId], row.received_at)
        await markDeliveryProcessed(trx, row.id)
        return 'tombstone' as const
      }
      const record = completeRecord(resource, row.shape, row.model as string, row.payload)
      if (record && (await applyPayload(trx, resource, record))) {
        await markDeliveryProcessed(trx, row.id)
        return 'payload' as const
      }
      // The delivery's arrival travels with the refresh, so that its freshness can be measured.
      const job = { resource: resource.name, id: recordId, receivedAt: row.received_at.toISOString() }
      const queued = await enqueueRefresh(boss, trx, job, refreshCoalesceSeconds)
      await markDeliveryProcessed(trx, row.id)
      return queued ? ('refresh queued' as const) : ('refresh coalesced' as const)
    })
    logger.debug({ outcome }, 'delivery processed')
    if (outcome === 'payload' || outcome === 'tombstone') onApplied?.(resource.name, outcome, row.received_at)
  })
}
