// Deals and projects: they share tags, the customer-side people and a company.
import { z } from 'zod'
import { renderTag } from './child-views.ts'
import { renderCompany } from './companies.ts'
import type { FieldErrors } from './http.ts'
import {
  assignGiven,
  contains,
  dateInput,
  invalid,
  type Kind,
  longText,
  naturalName,
  optionalId,
  required,
  text,
  unknownUser,
  type WriteContext,
} from './kind.ts'
import { renderPerson } from './people.ts'
import type { DealRow, ProjectRow, WorkRow } from './rows.ts'
import type { View } from './view.ts'

export const DEAL_STATES = ['open_0', 'open_25', 'open_50', 'open_75', 'won', 'lost'] as const
export const PROJECT_STATES = ['ready', 'open', 'closed'] as const
export const VALUE_TYPES = ['Total', 'Monatlich', 'Tagessatz', 'Stundensatz'] as const
const INCLUDES = ['tags', 'people', 'company', 'custom_fields'] as const

/** The upstream returns decimals as strings: `1500.0`, `99.5`. */
export function decimalString(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(value)
}

const decimal = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^-?\d+(\.\d+)?$/, 'is not a number')
      .transform(Number),
  ])
  .transform(decimalString)
const personIdsSet = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => /^\d+$/.test(part))
    .map(Number),
)

const workFields = {
  description: longText,
  user_id: optionalId,
  company_id: optionalId,
  person_ids_set: personIdsSet.optional(),
}
const dealFields = {
  ...workFields,
  name: required(120),
  value: decimal,
  value_type: z.enum(VALUE_TYPES),
  value_count: decimal,
  target_date: dateInput,
  currency: text(3),
  current_state: z.enum(DEAL_STATES).optional(),
}
const projectFields = {
  ...workFields,
  name: required(60),
  target_date: dateInput,
  current_state: z.enum(PROJECT_STATES).optional(),
}
const dealCreate = z.object(dealFields)
const dealUpdate = dealCreate.partial()
const projectCreate = z.object(projectFields)
const projectUpdate = projectCreate.partial()

type WorkInput = {
  user_id?: number | null
  company_id?: number | null
  person_ids_set?: number[]
}

function references(input: WorkInput, context: WriteContext): FieldErrors | null {
  const { store } = context
  if (input.company_id != null && !store.companies.rows.has(input.company_id)) {
    return { company_id: ['is invalid'] }
  }
  if (input.person_ids_set?.some((personId) => !store.people.rows.has(personId))) {
    return { person_ids_set: ['contains unknown people'] }
  }
  return unknownUser(store, input.user_id)
}

/** Moving to a final state sets `finished_at`. */
function finishes(row: WorkRow, state: string | undefined, final: readonly string[], now: number): void {
  if (state && state !== row.current_state && final.includes(state)) row.finished_at = now
}

/** The states of deals and projects, and those that finish one (`finished_at` set). */
const STATES = {
  deals: { all: DEAL_STATES, final: ['won', 'lost'] },
  projects: { all: PROJECT_STATES, final: ['closed'] },
} as const satisfies Record<string, { all: readonly string[]; final: readonly string[] }>

/**
 * `change_status`: the state moves, and its timestamp with it: `finished_at` is set on entering a final
 * state and cleared on leaving one (not shown; the plausible reading). Nothing else changes, not even
 * `updated_at`: whether it is bumped is the account's to decide (crm-account.ts). Field errors when the
 * state is not one of the kind's.
 */
export function changeState(
  plural: keyof typeof STATES,
  row: WorkRow,
  state: unknown,
  now: number,
): FieldErrors | null {
  const { all, final }: { all: readonly string[]; final: readonly string[] } = STATES[plural]
  if (typeof state !== 'string' || !all.includes(state))
    return { current_state: ['is not included in the list'] }
  if (state === row.current_state) return null
  if (final.includes(state)) row.finished_at = now
  else if (final.includes(row.current_state)) row.finished_at = null
  row.current_state = state
  return null
}

function renderWork(
  view: View,
  row: WorkRow,
  fields: Record<string, unknown>,
  includes: ReadonlySet<string>,
  methods: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const type = 'value' in fields ? 'Deal' : 'Project'
  const record: Record<string, unknown> = {
    id: row.id,
    account_id: view.accountId,
    user_id: row.user_id,
    company_id: row.company_id,
    name: row.name,
    description: row.description,
    ...fields,
    target_date: row.target_date,
    finished_at: row.finished_at === null ? null : view.time(row.finished_at),
    current_state: row.current_state,
    created_by_user_id: row.created_by_user_id,
    updated_by_user_id: row.updated_by_user_id,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
  if (includes.has('tags')) {
    record.tags = (row.tags ?? []).map((tag) => renderTag(view, tag, { id: row.id, type }))
  }
  if (includes.has('people')) {
    record.people = (row.person_ids ?? []).flatMap((personId) => {
      const person = view.store.people.rows.get(personId)
      return person ? [renderPerson(view, person)] : []
    })
  }
  if (includes.has('company')) {
    // A single related record: an object (or null), unlike the array includes.
    const company = row.company_id ? view.store.companies.rows.get(row.company_id) : undefined
    record.company = company ? renderCompany(view, company) : null
  }
  if (includes.has('custom_fields')) record.custom_fields = []
  if (methods.has('responsible_user_natural_name')) {
    record.responsible_user_natural_name = naturalName(view.store, row.user_id)
  }
  return record
}

function flatWork(view: View, row: WorkRow, fields: Record<string, unknown>): Record<string, unknown> {
  const company = row.company_id ? view.store.companies.rows.get(row.company_id) : undefined
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    ...fields,
    target_date: row.target_date,
    current_state: row.current_state,
    finished_at: row.finished_at === null ? null : view.time(row.finished_at),
    company: company?.name ?? null,
    company_id: row.company_id,
    user_id: row.user_id,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
}

const money = (row: DealRow) => ({
  value: row.value,
  value_type: row.value_type,
  value_count: row.value_count,
  currency: row.currency,
})

function newWork(
  context: WriteContext,
  id: number,
  input: WorkInput & { name: string; target_date: string },
) {
  const { now, actor } = context
  return {
    id,
    user_id: input.user_id ?? null,
    company_id: input.company_id ?? null,
    name: input.name,
    description: null,
    target_date: input.target_date,
    finished_at: null,
    created_by_user_id: actor.userId,
    updated_by_user_id: actor.userId,
    person_ids: input.person_ids_set,
    created_at: now,
    updated_at: now,
  }
}

function touched(row: WorkRow, context: WriteContext): void {
  row.updated_at = context.now
  row.updated_by_user_id = context.actor.userId
}

export const deals: Kind<DealRow> = {
  plural: 'deals',
  wrapper: 'deal',
  model: 'deal',
  attachableType: 'Deal',
  includeOptions: INCLUDES,
  rows: (store) => store.deals,
  sortName: (row) => row.name,
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render: (view, row, includes, methods) => renderWork(view, row, money(row), includes, methods),
  flat: (view, row) => flatWork(view, row, money(row)),
  create(input, context) {
    const parsed = dealCreate.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const { description, value, value_type, value_count, currency, current_state } = parsed.data
    const row: DealRow = {
      ...newWork(context, context.ids.next('deal'), parsed.data),
      description: description ?? null,
      value,
      value_type,
      value_count,
      currency: currency ?? 'EUR',
      current_state: 'open_0',
    }
    finishes(row, current_state, ['won', 'lost'], context.now)
    row.current_state = current_state ?? 'open_0'
    return { ok: true, row }
  },
  update(row, input, context) {
    const parsed = dealUpdate.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const { person_ids_set, currency, ...fields } = parsed.data
    finishes(row, fields.current_state, ['won', 'lost'], context.now)
    assignGiven(row, { ...fields, currency: currency ?? undefined, person_ids: person_ids_set })
    touched(row, context)
    return { ok: true, row }
  },
}

export const projects: Kind<ProjectRow> = {
  plural: 'projects',
  wrapper: 'project',
  model: 'project',
  attachableType: 'Project',
  includeOptions: INCLUDES,
  rows: (store) => store.projects,
  sortName: (row) => row.name,
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render: (view, row, includes, methods) => renderWork(view, row, {}, includes, methods),
  flat: (view, row) => flatWork(view, row, {}),
  create(input, context) {
    const parsed = projectCreate.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const { description, current_state } = parsed.data
    const row: ProjectRow = {
      ...newWork(context, context.ids.next('project'), parsed.data),
      description: description ?? null,
      current_state: 'open',
    }
    finishes(row, current_state, ['closed'], context.now)
    row.current_state = current_state ?? 'open'
    return { ok: true, row }
  },
  update(row, input, context) {
    const parsed = projectUpdate.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const { person_ids_set, ...fields } = parsed.data
    finishes(row, fields.current_state, ['closed'], context.now)
    assignGiven(row, { ...fields, person_ids: person_ids_set })
    touched(row, context)
    return { ok: true, row }
  },
}
