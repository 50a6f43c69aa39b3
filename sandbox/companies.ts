// Companies: organisations, with the same sub-objects as people.
import { z } from 'zod'
import { firstDetail, primaryAddr, renderPosition, renderReachable } from './child-views.ts'
import { mergeReachable, reachableAttributes } from './children.ts'
import {
  assignGiven,
  contains,
  invalid,
  type Kind,
  longText,
  naturalName,
  optionalId,
  required,
  unknownUser,
} from './kind.ts'
import type { CompanyRow } from './rows.ts'
import type { View } from './view.ts'

const fields = { background: longText, user_id: optionalId, ...reachableAttributes }
const createInput = z.object({ ...fields, name: required(120) })
const updateInput = z.object({ ...fields, name: required(120).optional() })

const INCLUDES = [
  'positions',
  'tags',
  'avatar',
  'tels',
  'emails',
  'homepages',
  'addrs',
  'custom_fields',
  'connections',
] as const

export function renderCompany(
  view: View,
  row: CompanyRow,
  includes: ReadonlySet<string> = new Set(),
  methods: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: row.id,
    account_id: view.accountId,
    name: row.name,
    background: row.background,
    user_id: row.user_id,
    created_by_user_id: row.created_by_user_id,
    updated_by_user_id: row.updated_by_user_id,
    is_own: row.is_own,
    demo: row.demo,
    import_log_id: row.import_log_id,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
  renderReachable(view, row, { id: row.id, type: 'Company' }, includes, record)
  if (includes.has('positions')) {
    const staff = [...(view.store.staff.get(row.id) ?? [])]
    record.positions = staff.flatMap((personId) => {
      const person = view.store.people.rows.get(personId)
      const positions = person?.positions?.filter((position) => position.company_id === row.id) ?? []
      return positions.map((position) => renderPosition(view, position, personId))
    })
  }
  if (methods.has('responsible_user_natural_name') || methods.has('all')) {
    record.responsible_user_natural_name = naturalName(view.store, row.user_id)
  }
  return record
}

export const companies: Kind<CompanyRow> = {
  plural: 'companies',
  wrapper: 'company',
  model: 'company',
  attachableType: 'Company',
  includeOptions: INCLUDES,
  rows: (store) => store.companies,
  sortName: (row) => row.name,
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render: renderCompany,
  flat(view, row) {
    const addr = primaryAddr(row)
    return {
      id: row.id,
      name: row.name,
      background: row.background,
      office_phone: firstDetail(row, 'tels', 'office') ?? firstDetail(row, 'tels', 'office_hq'),
      fax: firstDetail(row, 'tels', 'fax'),
      email: firstDetail(row, 'emails'),
      homepage: firstDetail(row, 'homepages'),
      street: addr?.street ?? null,
      zip: addr?.zip ?? null,
      city: addr?.city ?? null,
      country: addr?.country_code ?? null,
      user_id: row.user_id,
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
    }
  },
  create(input, context) {
    const parsed = createInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = unknownUser(context.store, parsed.data.user_id)
    if (errors) return invalid(errors)
    const { now, actor } = context
    const row: CompanyRow = {
      id: context.ids.next('company'),
      name: parsed.data.name,
      background: parsed.data.background ?? null,
      user_id: parsed.data.user_id ?? null,
      created_by_user_id: actor.userId,
      updated_by_user_id: actor.userId,
      is_own: false,
      demo: false,
      import_log_id: null,
      created_at: now,
      updated_at: now,
    }
    mergeReachable(row, parsed.data, context)
    return { ok: true, row }
  },
  update(row, input, context) {
    const parsed = updateInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = unknownUser(context.store, parsed.data.user_id)
    if (errors) return invalid(errors)
    const { name, background, user_id } = parsed.data
    assignGiven(row, { name, background, user_id })
    mergeReachable(row, parsed.data, context)
    row.updated_at = context.now
    row.updated_by_user_id = context.actor.userId
    return { ok: true, row }
  },
}
