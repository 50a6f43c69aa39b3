// A record's id. Every resource is keyed by a number (`id bigint`) but those whose `id` column is text:
// attachments, keyed by the upstream's `uuid` (the column's `from`). The engine's paths that a polled
// resource takes (the page walk, the writes, tombstones, reconciliation) key records by what these
// helpers give, so that a text id works there as a number does everywhere else.
import { coerce } from './columns.ts'
import type { Resource } from './types.ts'

export type RecordId = number | string

/** Whether the resource's `id` column is text (attachments). */
export function hasTextId(resource: Resource): boolean {
  return resource.columns.id?.type === 'text'
}

/** The SQL type of the resource's ids, for casts of id arrays (`::bigint[]`, `::text[]`). */
export const idType = (resource: Resource): 'bigint' | 'text' => (hasTextId(resource) ? 'text' : 'bigint')

/** The upstream key that holds a record's id: `id`, or the `id` column's `from` (attachments: `uuid`). */
export const idKey = (resource: Resource): string => resource.columns.id?.from ?? 'id'

/**
 * The id in a value the upstream sent as one: a number (or a string of digits) for numeric ids, a
 * string with more than white space for text ids (kept as it is); null for anything else.
 */
export function parseId(resource: Resource, value: unknown): RecordId | null {
  if (hasTextId(resource)) return typeof value === 'string' && value.trim() !== '' ? value : null
  const id = coerce('bigint', value)
  return typeof id === 'number' ? id : null
}

/** The id of an upstream record (see `parseId`), read from the resource's id key. */
export const idOf = (resource: Resource, record: Record<string, unknown>): RecordId | null =>
  parseId(resource, record[idKey(resource)])

/** Orders ids: numbers by value, strings by UTF-16 code units (the same order on every call). */
export function compareIds(a: RecordId, b: RecordId): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const left = String(a)
  const right = String(b)
  return left < right ? -1 : left > right ? 1 : 0
}

/** An id below every id of the resource: where reconciliation of unseen rows starts (0, or ''). */
export const idBeforeAll = (resource: Resource): RecordId => (hasTextId(resource) ? '' : 0)
