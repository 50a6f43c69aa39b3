// Tasks: to-dos attached to a person, company, deal or project. The upstream sends no webhooks for them.
import { z } from 'zod'
import { renderCompany } from './companies.ts'
import type { FieldErrors } from './http.ts'
import {
  assignGiven,
  contains,
  flag,
  id,
  invalid,
  type Kind,
  optionalId,
  renderUser,
  required,
  timestampInput,
  unknownUser,
  type WriteContext,
} from './kind.ts'
import { renderPerson } from './people.ts'
import { ATTACHABLE_TYPES, type AttachableType, type TaskRow } from './rows.ts'
import type { View } from './view.ts'

export const BADGES = ['task', 'call', 'meeting', 'email', 'preparation', 'other'] as const

const fields = {
  attachable_id: id.nullable().optional(),
  attachable_type: z.enum(ATTACHABLE_TYPES).nullable().optional(),
  badge: z.enum(BADGES).optional(),
  finished: flag.optional(),
  precise_time: timestampInput.nullable().optional(),
  end_time: timestampInput.nullable().optional(),
  user_id: optionalId,
  fuzzy: flag.optional(),
  entire_day: flag.optional(),
}
const createInput = z.object({ ...fields, name: required(255) })
const updateInput = z.object({ ...fields, name: required(255).optional() })

function attachableRow(view: View, type: AttachableType | null, attachableId: number | null) {
  if (type === null || attachableId === null) return undefined
  const { store } = view
  if (type === 'Person') {
    const person = store.people.rows.get(attachableId)
    return person && renderPerson(view, person)
  }
  if (type === 'Company') {
    const company = store.companies.rows.get(attachableId)
    return company && renderCompany(view, company)
  }
  const work = (type === 'Deal' ? store.deals : store.projects).rows.get(attachableId)
  return work && { id: work.id, name: work.name, current_state: work.current_state }
}

function references(input: z.output<typeof updateInput>, context: WriteContext): FieldErrors | null {
  const { attachable_id: attachableId, attachable_type: type } = input
  if (attachableId != null || type != null) {
    const view = { store: context.store, accountId: 0, time: String }
    if (!attachableRow(view, type ?? null, attachableId ?? null)) return { attachable: ['must exist'] }
  }
  return unknownUser(context.store, input.user_id)
}

export const tasks: Kind<TaskRow> = {
  plural: 'tasks',
  wrapper: 'task',
  model: null,
  attachableType: null,
  includeOptions: ['attachable', 'user'],
  rows: (store) => store.tasks,
  sortName: (row) => row.name,
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render(view, row, includes) {
    const stamp = (seconds: number | null) => (seconds === null ? null : view.time(seconds))
    const record: Record<string, unknown> = {
      id: row.id,
      account_id: view.accountId,
      attachable_id: row.attachable_id,
      attachable_type: row.attachable_type,
      badge: row.badge,
      finished: row.finished,
      name: row.name,
      precise_time: stamp(row.precise_time),
      user_id: row.user_id,
      created_by_user_id: row.created_by_user_id,
      updated_by_user_id: row.updated_by_user_id,
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
      comments_count: row.comments_count,
      end_time: stamp(row.end_time),
      fuzzy: row.fuzzy,
      entire_day: row.entire_day,
    }
    if (includes.has('attachable')) {
      record.attachable = attachableRow(view, row.attachable_type, row.attachable_id) ?? null
    }
    if (includes.has('user')) {
      const user = row.user_id === null ? undefined : view.store.users.rows.get(row.user_id)
      record.user = user ? renderUser(user) : null
    }
    return record
  },
  flat: (view, row) => tasks.render(view, row, new Set()),
  create(input, context) {
    const parsed = createInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const data = parsed.data
    const { now, actor } = context
    const row: TaskRow = {
      id: context.ids.next('task'),
      attachable_id: data.attachable_id ?? null,
      attachable_type: data.attachable_type ?? null,
      badge: data.badge ?? 'task',
      finished: data.finished ?? false,
      name: data.name,
      precise_time: data.precise_time ?? null,
      user_id: data.user_id ?? actor.userId,
      created_by_user_id: actor.userId,
      updated_by_user_id: actor.userId,
      comments_count: 0,
      end_time: data.end_time ?? null,
      fuzzy: data.fuzzy ?? false,
      entire_day: data.entire_day ?? false,
      created_at: now,
      updated_at: now,
    }
    return { ok: true, row }
  },
  update(row, input, context) {
    const parsed = updateInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    assignGiven(row, parsed.data)
    row.updated_at = context.now
    row.updated_by_user_id = context.actor.userId
    return { ok: true, row }
  },
}
