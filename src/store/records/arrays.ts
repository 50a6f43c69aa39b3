// Column values as PostgreSQL array literals: rows travel to the server column by column.
import { type RawBuilder, sql } from 'kysely'
import { coerce, type SqlType } from '../../resources/columns.ts'
import type { Columns } from '../../resources/index.ts'
import type { UpstreamRecord } from './types.ts'

export const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`
export const table = (qualified: string) => qualified.split('.').map(quote).join('.')
export const columnList = (names: string[], prefix = '') =>
  names.map((name) => prefix + quote(name)).join(', ')

// Rows travel column by column: one array parameter per column, zipped back into rows by
// `rows from (unnest(...), ...)`. PostgreSQL parses a typed array far faster than a JSON recordset.
// The records themselves travel once, as one JSON array: the parents' `_raw` are its elements and
// a child's `_raw` is taken out of its parent's (`_raw -> key -> index`), never sent again.
// Children are replaced only for parents the upsert wrote (`parents`): their rows are read once
// through the (_parent_resource, _parent_id) index, whatever the size of the table; the ones equal to
// an incoming row are kept (one per place), the others deleted by ctid, the incoming rows not kept
// inserted.

export interface ColumnSpec {
  name: string
  type: SqlType
  key: string
  map: ((value: unknown) => unknown) | undefined
}

const specCache = new WeakMap<Columns, ColumnSpec[]>()
export function columnSpecs(columns: Columns): ColumnSpec[] {
  let specs = specCache.get(columns)
  if (!specs) {
    specs = Object.entries(columns).map(([name, column]) => ({
      name,
      type: column.type,
      key: column.from ?? name,
      map: column.map,
    }))
    specCache.set(columns, specs)
  }
  return specs
}

/**
 * Coerces column values; a timestamp or date string seen before in the batch is not parsed again
 * (children mostly carry their parent's stamps). `coerce` is pure, so the cache changes nothing else.
 */
export function coercer(): (type: SqlType, value: unknown) => unknown {
  const seen = { timestamptz: new Map<string, unknown>(), date: new Map<string, unknown>() }
  return (type, value) => {
    if (typeof value !== 'string' || (type !== 'timestamptz' && type !== 'date')) return coerce(type, value)
    const cache = seen[type]
    let coerced = cache.get(value)
    if (coerced === undefined) {
      coerced = coerce(type, value)
      cache.set(value, coerced)
    }
    return coerced
  }
}

export type Coerce = ReturnType<typeof coercer>

// The array parameters are written here as PostgreSQL array literals (what node-postgres would make
// of a JavaScript array, without its per-element escaping passes): every string quoted, `\` and `"`
// escaped, numbers and booleans as they print, null as NULL.
const NEEDS_ESCAPE = /["\\]/
export const quoteElement = (text: string) =>
  `"${NEEDS_ESCAPE.test(text) ? text.replace(/["\\]/g, '\\$&') : text}"`

/** A coerced value as an element of an array literal (jsonb as its JSON text). */
export function arrayElement(type: SqlType, coerced: unknown): string {
  if (coerced === null || coerced === undefined) return 'NULL'
  if (type === 'jsonb') return quoteElement(JSON.stringify(coerced))
  if (typeof coerced === 'string') return quoteElement(coerced)
  return String(coerced)
}

export const arrayLiteral = (elements: (string | number)[]) => `{${elements.join(',')}}`

/** Appends the coerced value of every column of `source` to that column's array of elements. */
export function pushColumns(
  specs: ColumnSpec[],
  arrays: string[][],
  source: UpstreamRecord,
  convert: Coerce,
  defaults?: Record<string, unknown>,
) {
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as ColumnSpec
    const raw = spec.key in source ? source[spec.key] : defaults?.[spec.name]
    ;(arrays[i] as string[]).push(arrayElement(spec.type, convert(spec.type, spec.map ? spec.map(raw) : raw)))
  }
}

/** `unnest($1::bigint[]), unnest($2::text[]), ...` of the given arrays of elements. */
export function unnests(specs: { type: SqlType }[], arrays: string[][]): RawBuilder<unknown>[] {
  return specs.map((spec, i) => sql`unnest(${arrayLiteral(arrays[i] as string[])}::${sql.raw(spec.type)}[])`)
}
