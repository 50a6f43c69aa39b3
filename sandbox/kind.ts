// What the CRM's routes, writes and webhooks need to know about one main resource: the shape of an
// entry of the table of kinds (kinds.ts), so routes are registered in a loop.
import { z } from 'zod'
import { parseTimestamp } from './clock.ts'
import type { Behaviour } from './faults.ts'
import { type FieldErrors, fieldErrors } from './http.ts'
import type { Ids } from './ids.ts'
import type { FieldFilter, Query } from './listing.ts'
import type { AttachableType, HookModel, Plural, Stamped, UserRow } from './rows.ts'
import type { Generation } from './seeding.ts'
import type { Collection, Store } from './store.ts'
import type { View } from './view.ts'

/** Who makes a change: a user in the upstream's UI, or the owner of the API key. */
export interface Actor {
  userId: number | null
  api: boolean
}

export interface WriteContext {
  store: Store
  ids: Ids
  /** Seconds. */
  now: number
  actor: Actor
}

/** A failure is a 422 with field errors, unless it says otherwise (507: no storage left). */
export type Outcome<R> = { ok: true; row: R } | { ok: false; errors: FieldErrors; status?: 507 }

// Method syntax on purpose: it lets a Kind<PersonRow> stand in the table of Kind<Stamped>.
export interface Kind<R extends Stamped = Stamped> {
  plural: Plural
  /** The key records are wrapped under in requests and answers, and the name in error messages. */
  wrapper: string
  /** The key an answer wraps this record under, when it is not `wrapper` (notes: their concrete type). */
  wrapperOf?(row: R): string
  /** Webhook model, or null when the upstream sends no webhooks for it. */
  model: HookModel | null
  /** Written by the upstream itself (activities): no create, update or destroy routes. */
  readOnly?: boolean
  /**
   * The index rows, when the kind lists them its own way rather than by `order` and `filter[...]`
   * (activities: newest first, filters as the behaviour says).
   */
  index?(store: Store, filters: readonly FieldFilter[], behaviour: Behaviour): Stamped[]
  attachableType: AttachableType | null
  includeOptions: readonly string[]
  rows(store: Store): Collection<R>
  sortName(row: R): string
  /** The query parameter search requires (400 without it). */
  searchRequires: string | null
  matches(row: R, query: Query): boolean
  render(
    view: View,
    row: R,
    includes: ReadonlySet<string>,
    methods?: ReadonlySet<string>,
  ): Record<string, unknown>
  /** The `flat` webhook shape: simple keys only. */
  flat(view: View, row: R): Record<string, unknown>
  /** Validates and builds a new row; the caller inserts it. */
  create(input: unknown, context: WriteContext): Outcome<R>
  /** Validates, then changes the row in place (nothing changes when invalid). */
  update(row: R, input: unknown, context: WriteContext): Outcome<R>
  /** Generates `count` records; the kinds of seed-crm.ts are generated there, together. */
  seed?(generation: Generation): void
}

export function invalid<R>(errors: FieldErrors | z.ZodError, input?: unknown): Outcome<R> {
  return { ok: false, errors: errors instanceof z.ZodError ? fieldErrors(errors, input) : errors }
}

// ---- input fields shared by the resources ----------------------------------------------------

const tooLong = (max: number) => `is too long (maximum is ${max} characters)`
export const text = (max: number) => z.string().max(max, tooLong(max)).nullable().optional()
export const longText = z.string().nullable().optional()
export const required = (max: number) => z.string().trim().min(1, "can't be blank").max(max, tooLong(max))
export const id = z.union([z.number().int().positive(), z.string().regex(/^\d+$/).transform(Number)])
export const optionalId = id.nullable().optional()
export const flag = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1'),
])
/** `YYYY-MM-DD`; the upstream also accepts day-month-year on input. */
export const dateInput = z.string().transform((value, context) => {
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  const european = /^(\d{1,2})[.-](\d{1,2})[.-](\d{4})$/.exec(value)
  const [year, month, day] = iso
    ? [iso[1], iso[2], iso[3]]
    : european
      ? [european[3], european[2], european[1]]
      : []
  const date = `${year}-${month?.padStart(2, '0')}-${day?.padStart(2, '0')}`
  if (!year || Number.isNaN(Date.parse(`${date}T00:00:00Z`))) {
    context.issues.push({ code: 'custom', message: 'is not a date', input: value })
    return z.NEVER
  }
  return date
})
export const timestampInput = z.string().transform((value, context) => {
  const seconds = parseTimestamp(value)
  if (seconds === null) {
    context.issues.push({ code: 'custom', message: 'is not a time', input: value })
    return z.NEVER
  }
  return seconds
})

/** Copies the fields the input gives (undefined: not given) onto the row. */
export function assignGiven<R extends object>(row: R, given: Partial<R>): void {
  for (const [key, value] of Object.entries(given)) {
    if (value !== undefined) (row as Record<string, unknown>)[key] = value
  }
}

/**
 * `includes`: space separated in a request (a comma-separated list finds nothing, as upstream),
 * comma separated in a hook. `all` selects every option; unknown names are ignored.
 */
export function parseIncludes(
  raw: string | null | undefined,
  options: readonly string[],
  separator: RegExp = /\s+/,
): Set<string> {
  const wanted = (raw ?? '').split(separator).filter(Boolean)
  if (wanted.includes('all')) return new Set(options)
  return new Set(wanted.filter((name) => options.includes(name)))
}

export function parseMethods(raw: string | undefined): Set<string> {
  return new Set((raw ?? '').split(/\s+/).filter(Boolean))
}

export function unknownUser(store: Store, userId: number | null | undefined): FieldErrors | null {
  return userId == null || store.users.rows.has(userId) ? null : { user_id: ['is invalid'] }
}

export function renderUser(user: UserRow): Record<string, unknown> {
  return { id: user.id, first: user.first, name: user.name, login: user.login }
}

export function naturalName(store: Store, userId: number | null): string | null {
  const user = userId === null ? undefined : store.users.rows.get(userId)
  return user ? `${user.first} ${user.name}` : null
}

/** Case-insensitive substring match, as a search box would. */
export function contains(value: string | null | undefined, wanted: string): boolean {
  return value?.toLowerCase().includes(wanted.toLowerCase()) ?? false
}
