// Records as the upstream sends them, checked at the edge. Only what the sync cannot work without
// rejects a record: an id, and for resources ordered by it an `updated_at` that parses. Every other
// field is judged by the rule the store writes it with (`coerce`): gender 2 or "female_user",
// decimals as strings, `newsletter: false`, offsets or Z, nulls anywhere all pass. A value its column
// cannot hold is reported as drift, not rejected: the row keeps null there and `_raw` keeps the value.
import { z } from 'zod'
import { type Column, coerce } from '../resources/columns.ts'
import { hasUpdatedAt, type Resource } from '../resources/index.ts'
import { RejectedRecordError } from './errors.ts'

const describe = (value: unknown) => (value === undefined ? 'is missing' : `is ${JSON.stringify(value)}`)

export const recordId = z.unknown().transform((value, ctx) => {
  const id = coerce('bigint', value)
  if (typeof id === 'number' && id > 0) return id
  ctx.addIssue({ code: 'custom', message: `${describe(value)}, not an id` })
  return z.NEVER
})

const updatedAt = z.unknown().transform((value, ctx) => {
  if (typeof value === 'string' && coerce('timestamptz', value) !== null) return value
  ctx.addIssue({ code: 'custom', message: `${describe(value)}, not a timestamp` })
  return z.NEVER
})

/** What the sync needs of every record; all other keys are kept as they came. */
const ordered = z.looseObject({ id: recordId, updated_at: updatedAt })
const unordered = z.looseObject({ id: recordId })

export type FetchedRecord = z.output<typeof unordered> & { updated_at?: string }

export interface Drift {
  resource: string
  id: number
  field: string
  value: unknown
}

const storable = (column: Column) =>
  z
    .unknown()
    .optional()
    .refine((value) => {
      const mapped = column.map ? column.map(value) : value
      return mapped === undefined || mapped === null || coerce(column.type, mapped) !== null
    })

const schemas = new Map<Resource, { keys: z.ZodType<FetchedRecord>; fields: z.ZodType }>()

/** The schemas of a resource, derived from its columns in the resource table. */
export function recordSchemas(resource: Resource) {
  let found = schemas.get(resource)
  if (!found) {
    const fields = Object.fromEntries(
      Object.entries(resource.columns).map(([name, column]) => [column.from ?? name, storable(column)]),
    )
    found = { keys: hasUpdatedAt(resource) ? ordered : unordered, fields: z.looseObject(fields) }
    schemas.set(resource, found)
  }
  return found
}

/**
 * The record with its id as a number, every key kept; throws a RejectedRecordError naming the
 * resource, id and field when the sync cannot use it. `onDrift` hears of values the mirror cannot hold.
 */
export function parseRecord(
  resource: Resource,
  value: unknown,
  onDrift?: (drift: Drift) => void,
): FetchedRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RejectedRecordError(resource.name, null, '(record)', `${describe(value)}, not an object`)
  }
  const { keys, fields } = recordSchemas(resource)
  const parsed = keys.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = String(issue?.path[0] ?? '(record)')
    const id = coerce('bigint', (value as { id?: unknown }).id)
    throw new RejectedRecordError(
      resource.name,
      typeof id === 'number' ? id : null,
      field,
      issue?.message ?? 'is invalid',
    )
  }
  const record = parsed.data
  const checked = fields.safeParse(value)
  if (!checked.success && onDrift) {
    for (const issue of checked.error.issues) {
      const field = String(issue.path[0])
      onDrift({
        resource: resource.name,
        id: record.id,
        field,
        value: (value as Record<string, unknown>)[field],
      })
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

/** A CRM record comes wrapped under its singular name (`{ person: {...} }`); the reservation service's bare. */
export function unwrap(wrapper: string | null, value: unknown): unknown {
  if (wrapper === null || typeof value !== 'object' || value === null) return value
  const inner = (value as Record<string, unknown>)[wrapper]
  // A bare record (it has its own id) is taken as it is.
  return typeof inner === 'object' && inner !== null && !('id' in value) ? inner : value
}
