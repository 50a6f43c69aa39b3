// Records as the upstream sends them, checked at the edge. Only what the sync cannot work without
// rejects a record: an id (a number, or for a resource with text ids such as attachments the string
// under its id key, `uuid`), and for resources ordered by it an `updated_at` that parses. Keys the
// resource discards (attachments' Base64 `data`) are dropped here, from the copy every record becomes,
// before anything is written or logged. Every other field is judged by the rule the store writes it
// with (`coerce`): gender 2 or "female_user", decimals as strings, `newsletter: false`, offsets or Z,
// nulls anywhere all pass. A value its column cannot hold is reported as drift, not rejected: the row
// keeps null there and `_raw` keeps the value.
import { z } from 'zod'
import { type Column, coerce } from '../resources/columns.ts'
import {
  hasTextId,
  hasUpdatedAt,
  idKey,
  idOf,
  parseId,
  type RecordId,
  type Resource,
} from '../resources/index.ts'
import { serialize } from '../store/jsonb.ts'
import { RejectedRecordError } from './errors.ts'

/** The value for an error message: its JSON, cut after 200 characters. */
function describe(value: unknown): string {
  if (value === undefined) return 'is missing'
  const text = serialize(value) ?? 'nested too deep to show'
  return `is ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`
}

export const recordId = z.unknown().transform((value, ctx) => {
  const id = coerce('bigint', value)
  if (typeof id === 'number' && id > 0) return id
  ctx.addIssue({ code: 'custom', message: `${describe(value)}, not an id` })
  return z.NEVER
})

/** A text id (attachments' `uuid`): a string with more than white space, kept as it is. */
const textId = z.unknown().transform((value, ctx) => {
  if (typeof value === 'string' && value.trim() !== '') return value
  ctx.addIssue({ code: 'custom', message: `${describe(value)}, not an id` })
  return z.NEVER
})

const updatedAt = z.unknown().transform((value, ctx) => {
  if (typeof value === 'string' && coerce('timestamptz', value) !== null) return value
  ctx.addIssue({ code: 'custom', message: `${describe(value)}, not a timestamp` })
  return z.NEVER
})

/**
 * What the sync needs of every record: its id (under the resource's id key) and, where it is the
 * sync's clock, `updated_at`. Only these keys are checked: the record itself keeps every key as it
 * came but those discarded, a numeric id as the number (see `parseRecord`).
 */
function requirements(resource: Resource) {
  const id = hasTextId(resource) ? textId : recordId
  return hasUpdatedAt(resource)
    ? z.object({ [idKey(resource)]: id, updated_at: updatedAt })
    : z.object({ [idKey(resource)]: id })
}

/** A record as parsed: every key as it came but those discarded; read its id with `idOf`. */
export type FetchedRecord = { updated_at?: string; [key: string]: unknown }

export interface Drift {
  resource: string
  id: RecordId
  field: string
  value: unknown
}

interface FieldCheck {
  key: string
  column: Column
}

const checks = new Map<
  Resource,
  { required: ReturnType<typeof requirements>; fields: FieldCheck[]; discard: readonly string[] }
>()

/** What a record of the resource is checked against, derived from its columns in the resource table. */
function recordChecks(resource: Resource) {
  let found = checks.get(resource)
  if (!found) {
    // One check per upstream key (the last column read from it), in the order of the columns.
    const byKey = Object.fromEntries(
      Object.entries(resource.columns).map(([name, column]) => [column.from ?? name, column]),
    )
    found = {
      required: requirements(resource),
      fields: Object.entries(byKey).map(([key, column]) => ({ key, column })),
      discard: resource.discard ?? [],
    }
    checks.set(resource, found)
  }
  return found
}

/** Whether the value of a field fits its column as the store writes it (`coerce`). */
function storable(column: Column, value: unknown): boolean {
  const mapped = column.map ? column.map(value) : value
  return mapped === undefined || mapped === null || coerce(column.type, mapped) !== null
}

/**
 * The record with a numeric id as the number, every key kept but those the resource discards; throws a
 * RejectedRecordError naming the resource, id and field when the sync cannot use it. `onDrift` hears of
 * values the mirror cannot hold.
 */
export function parseRecord(
  resource: Resource,
  value: unknown,
  onDrift?: (drift: Drift) => void,
): FetchedRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RejectedRecordError(resource.name, null, '(record)', `${describe(value)}, not an object`)
  }
  const source = value as Record<string, unknown>
  const { required, fields, discard } = recordChecks(resource)
  const parsed = required.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = String(issue?.path[0] ?? '(record)')
    throw new RejectedRecordError(
      resource.name,
      idOf(resource, source),
      field,
      issue?.message ?? 'is invalid',
    )
  }
  // A copy of the record with the id checked (a copy: zod copying every key would cost more), without
  // the keys the resource discards.
  const record: FetchedRecord = hasTextId(resource) ? { ...source } : { ...source, id: parsed.data.id }
  for (const key of discard) delete record[key]
  // Drift is diagnostics, not validation: one plain pass with the store's own rule per column.
  if (onDrift) {
    const id = parseId(resource, record[idKey(resource)]) as RecordId
    for (const { key, column } of fields) {
      const field = source[key]
      if (!storable(column, field)) onDrift({ resource: resource.name, id, field: key, value: field })
    }
  }
  return record
}

/** Parses a page: usable records, and one error for each record that is not. */
export function parseRecords(
  resource: Resource,
  values: unknown[],
  onDrift?: (drift: Drift) => void,
): { records: FetchedRecord[]; rejected: RejectedRecordError[] } {
  const records: FetchedRecord[] = []
  const rejected: RejectedRecordError[] = []
  for (const value of values) {
    try {
      records.push(parseRecord(resource, value, onDrift))
    } catch (error) {
      if (!(error instanceof RejectedRecordError)) throw error
      rejected.push(error)
    }
  }
  return { records, rejected }
}

/**
 * A CRM record comes wrapped under its singular name (`{ person: {...} }`), or with wrapper `'*'` under
 * a single key whatever its name (`{ protocol_object_note: {...} }`, and so a key never seen before);
 * the reservation service's are bare.
 */
export function unwrap(wrapper: string | null, value: unknown): unknown {
  if (wrapper === null || typeof value !== 'object' || value === null) return value
  // A bare record (it has its own id) is taken as it is.
  if ('id' in value) return value
  let inner: unknown
  if (wrapper === '*') {
    // Exactly one key, holding an object; anything else is taken as it is (and rejected without an id).
    const keys = Object.keys(value)
    inner = keys.length === 1 ? (value as Record<string, unknown>)[keys[0] as string] : undefined
    if (Array.isArray(inner)) return value
  } else {
    inner = (value as Record<string, unknown>)[wrapper]
  }
  return typeof inner === 'object' && inner !== null ? inner : value
}
