// The door of src/api-client: the only code that speaks HTTP to the upstream services.
import type { Config } from '../config/index.ts'
import { configSecrets } from '../log.ts'
import { type CrmClient, createCrmClient } from './crm.ts'
import type { ClientDeps } from './reader.ts'
import { createReservationClient, type ReservationClient } from './reservation.ts'

/** @internal */
export type { Clock } from './clock.ts'
export type { CrmClient } from './crm.ts'
export * from './errors.ts'
export { createUpstreamMetrics, type UpstreamMetrics } from './metrics.ts'
export type { ClientDeps, Order, RecordPage, ResourceReader } from './reader.ts'
export type { FetchedRecord } from './records.ts'
export type { ReservationClient } from './reservation.ts'
export { createCrmClient, createReservationClient }

export interface UpstreamClients {
  crm: CrmClient
  /** Null when the reservation service is not configured. */
  reservation: ReservationClient | null
}

export function createUpstreamClients(config: Config, deps: ClientDeps): UpstreamClients {
  const { timeoutSeconds, maxRetries, maxPages } = config.upstream
  const common = { timeoutSeconds, maxRetries, maxPages, secrets: configSecrets(config) }
  return {
    crm: createCrmClient({ ...config.crm, ...config.upstream.crm, ...common }, deps),
    reservation: config.reservation
      ? createReservationClient({ ...config.reservation, ...config.upstream.reservation, ...common }, deps)
      : null,
  }
}
