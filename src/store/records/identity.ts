// A record's id, the newest record of each id in a batch, and the upstream's own soft-delete mark.
import { coerce } from '../../resources/columns.ts'
import { hasUpdatedAt, idKey, idOf, type RecordId, type Resource } from '../../resources/index.ts'
import type { Coerce } from './arrays.ts'
import { InvalidRecordError, type UpstreamRecord } from './types.ts'

/** The record's id under the resource's id key: a number, or a string where ids are text (attachments). */
export function recordId(resource: Resource, record: UpstreamRecord): RecordId {
  const id = idOf(resource, record)
  if (id === null) {
    throw new InvalidRecordError(
      `${resource.name}: a record without a usable id (${JSON.stringify(record[idKey(resource)])})`,
    )
  }
  return id
}

/** Keeps one record per id: the newest by `updated_at`, the later one on a tie. */
export function newestPerId(
  resource: Resource,
  records: UpstreamRecord[],
  convert: Coerce,
): Map<RecordId, UpstreamRecord> {
  const byId = new Map<RecordId, UpstreamRecord>()
  const ordered = hasUpdatedAt(resource)
  for (const record of records) {
    const id = recordId(resource, record)
    const updatedAt = ordered ? convert('timestamptz', record.updated_at) : null
    if (ordered && updatedAt === null) {
      throw new InvalidRecordError(`${resource.name} ${id}: updated_at is missing or unparsable`)
    }
    const previous = byId.get(id)
    if (previous && ordered && Date.parse(String(previous.updated_at)) > Date.parse(String(updatedAt)))
      continue
    byId.set(id, record)
  }
  return byId
}

export function softDeletedAt(resource: Resource, record: UpstreamRecord, now: Date): string | null {
  if (!resource.softDeleteKey) return null
  const mark = record[resource.softDeleteKey]
  if (mark === undefined || mark === null || mark === false) return null
  return (coerce('timestamptz', mark) as string | null) ?? now.toISOString()
}
