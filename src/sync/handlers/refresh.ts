// Refresh of one record: `show` with the resource's includes, then apply; 404 tombstones it.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import type { UpstreamClients } from '../../api-client/index.ts'
import type { Logger } from '../../log.ts'
import { findResource } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { tombstone, upsertRecords } from '../../store/records.ts'

const refreshJob = z.object({ resource: z.string(), id: z.number().int().positive() })

export interface RefreshHandlerDeps {
  db: Db
  clients: UpstreamClients
  logger: Logger
  onApplied?: (resource: string, source: 'fetch' | 'tombstone') => void
}

export function createRefreshHandler({ db, clients, logger, onApplied }: RefreshHandlerDeps) {
  return async (jobs: Job<unknown>[]): Promise<void> => {
    for (const job of jobs) {
      const parsed = refreshJob.safeParse(job.data)
      const resource = parsed.success ? findResource(parsed.data.resource) : undefined
      if (!parsed.success || !resource?.routes.show) {
        logger.error({ jobId: job.id, data: job.data }, 'refresh job for nothing crm-sync can fetch; dropped')
        continue
      }
      const client = resource.service === 'crm' ? clients.crm : clients.reservation
      if (!client) continue // the reservation service is no longer configured
      const { id } = parsed.data
      // Upstream failures throw: pg-boss retries the job with backoff.
      const result = await client.show(resource, id)
      if (result.status === 'found') {
        await upsertRecords(db, resource, [result.record], { source: 'fetch', fetchedAt: result.fetchedAt })
        onApplied?.(resource.name, 'fetch')
      } else {
        await tombstone(db, resource, [id], result.fetchedAt)
        onApplied?.(resource.name, 'tombstone')
      }
      logger.debug(
        { jobId: job.id, resource: resource.name, recordId: id, status: result.status },
        'record refreshed',
      )
    }
  }
}
