// What the record writers take and give back.
import type { RecordId } from '../../resources/index.ts'

export type UpstreamRecord = Record<string, unknown>

export type RecordOrigin =
  /** The upstream's answer to a request sent at `fetchedAt` (show or index page). */
  | { source: 'fetch'; fetchedAt: Date }
  /** A webhook payload. */
  | { source: 'payload' }

export interface UpsertResult {
  /** Ids whose rows were written (strings where the resource's ids are text). */
  applied: RecordId[]
  /** Ids whose rows were newer (or tombstoned) and kept. */
  ignored: RecordId[]
  /** Of `applied`, the ids that had no row before (inserted, not updated). */
  inserted: RecordId[]
}

export class InvalidRecordError extends Error {
  override name = 'InvalidRecordError'
}
