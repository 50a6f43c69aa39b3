// Index pages: ordering, offset paging and field filters, shared by both services.
// Sort orders are cached per collection version, so a sweep of 400 pages sorts once, not 400 times.
import { parseTimestamp } from './clock.ts'
import type { Stamped } from './rows.ts'
import type { Collection } from './store.ts'

/** A request's query parameters, by name. */
export type Query = (name: string) => string | undefined

export type Criterion = 'created_at' | 'updated_at' | 'name'
export interface Order {
  criterion: Criterion
  direction: 'asc' | 'desc'
}

export const DEFAULT_ORDER: Order = { criterion: 'name', direction: 'asc' }

/**
 * `updated_at-desc`. The reservation service also accepts `updated-at-desc` (`hyphenated`); the CRM
 * does not, and like any unknown order it falls back to `name-asc`, silently. Without a direction
 * the default depends on the criterion, which is why clients must always give both.
 */
export function parseOrder(raw: string | undefined, options: { hyphenated: boolean }): Order {
  const match = /^(.+?)(?:-(asc|desc))?$/.exec(raw?.trim() ?? '')
  if (!match?.[1]) return DEFAULT_ORDER
  let criterion = options.hyphenated ? match[1].replaceAll('-', '_') : match[1]
  if (criterion === 'activity') criterion = 'updated_at'
  if (criterion !== 'created_at' && criterion !== 'updated_at' && criterion !== 'name') return DEFAULT_ORDER
  const direction =
    match[2] === 'asc' || match[2] === 'desc' ? match[2] : criterion === 'name' ? 'asc' : 'desc'
  return { criterion, direction }
}

const collator = new Intl.Collator('de', { sensitivity: 'base' })
const sortCache = new WeakMap<object, { version: number; orders: Map<string, unknown[]> }>()

/**
 * All rows in the order. Ties (same second, same name) are by id, so pages are stable between calls,
 * unless `shuffle` is given: then every call orders each group of ties anew with it (behaviour
 * `tieOrder`).
 */
export function sortedRows<R extends Stamped>(
  from: Collection<R>,
  order: Order,
  name: (row: R) => string,
  shuffle?: () => number,
): R[] {
  const sorted = sortedById(from, order, name)
  if (!shuffle) return sorted
  const { criterion } = order
  const tied =
    criterion === 'name'
      ? (a: R, b: R) => collator.compare(name(a), name(b)) === 0
      : (a: R, b: R) => a[criterion] === b[criterion]
  return shuffledTies(sorted, tied, shuffle)
}

/** A copy of `rows` with each run of neighbours that `tied` calls equal in a random order. */
export function shuffledTies<R>(
  rows: readonly R[],
  tied: (a: R, b: R) => boolean,
  random: () => number,
): R[] {
  const out = [...rows]
  let start = 0
  for (let end = 1; end <= out.length; end++) {
    if (end < out.length && tied(out[start] as R, out[end] as R)) continue
    for (let i = end - 1; i > start; i--) {
      const j = start + Math.floor(random() * (i - start + 1))
      ;[out[i], out[j]] = [out[j] as R, out[i] as R]
    }
    start = end
  }
  return out
}

function sortedById<R extends Stamped>(from: Collection<R>, order: Order, name: (row: R) => string): R[] {
  let cached = sortCache.get(from)
  if (!cached || cached.version !== from.version) {
    cached = { version: from.version, orders: new Map() }
    sortCache.set(from, cached)
  }
  const key = `${order.criterion}-${order.direction}`
  const hit = cached.orders.get(key)
  if (hit) return hit as R[]
  const sign = order.direction === 'asc' ? 1 : -1
  let sorted: R[]
  if (order.criterion === 'name') {
    const keyed = [...from.rows.values()].map((row) => ({ row, key: name(row) }))
    keyed.sort((a, b) => sign * collator.compare(a.key, b.key) || a.row.id - b.row.id)
    sorted = keyed.map((entry) => entry.row)
  } else {
    const field = order.criterion
    sorted = [...from.rows.values()].sort((a, b) => sign * (a[field] - b[field]) || a.id - b.id)
  }
  cached.orders.set(key, sorted)
  return sorted
}

export interface Paging {
  perpage: number
  page: number
}

/** A `perpage` above the cap is lowered without notice: a short page is not proof of the last one. */
export function parsePaging(query: Query, defaultPerpage: number, maxPerpage: number): Paging {
  const perpage = positiveInteger(query('perpage')) ?? defaultPerpage
  return { perpage: Math.min(perpage, maxPerpage), page: positiveInteger(query('page')) ?? 1 }
}

function positiveInteger(value: string | undefined): number | null {
  const parsed = Number.parseInt(value ?? '', 10)
  return Number.isFinite(parsed) && parsed > 0 ? parsed : null
}

export function pageOf<R>(rows: readonly R[], paging: Paging): R[] {
  const start = (paging.page - 1) * paging.perpage
  return rows.slice(start, start + paging.perpage)
}

export interface FieldFilter {
  field: string
  operator: 'equal' | 'larger_than'
  value: string
}

/** `filter[updated_at][larger_than]=...`; unknown operators are ignored, as nothing says otherwise. */
export function parseFilters(queries: Record<string, string[]>): FieldFilter[] {
  const filters: FieldFilter[] = []
  for (const [key, values] of Object.entries(queries)) {
    const match = /^filter\[(\w+)\]\[(\w+)\]$/.exec(key)
    const value = values[values.length - 1]
    if (!match?.[1] || value === undefined) continue
    if (match[2] === 'equal' || match[2] === 'larger_than') {
      filters.push({ field: match[1], operator: match[2], value })
    }
  }
  return filters
}

export function matchesFilters(row: object, filters: readonly FieldFilter[]): boolean {
  return filters.every((filter) => matchesFilter((row as Record<string, unknown>)[filter.field], filter))
}

function matchesFilter(actual: unknown, filter: FieldFilter): boolean {
  // Timestamps are stored as seconds; the filter gives them as ISO strings.
  const expected =
    typeof actual === 'number' && filter.field.endsWith('_at') ? parseTimestamp(filter.value) : filter.value
  if (expected === null) return false
  if (filter.operator === 'equal') return String(actual) === String(expected)
  if (actual === null || actual === undefined) return false
  const left = Number(actual)
  const right = Number(expected)
  if (Number.isFinite(left) && Number.isFinite(right)) return left > right
  return String(actual) > String(expected)
}
