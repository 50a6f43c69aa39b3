// People: the CRM's contacts. Shaped exactly like the person of docs/upstream.md. Their
// historic events and assistants, in no include, are person-details.ts's.
import { z } from 'zod'
import { firstDetail, primaryAddr, renderPosition, renderReachable } from './child-views.ts'
import { mergePositions, mergeReachable, positionsAttributes, reachableAttributes } from './children.ts'
import { renderCompany } from './companies.ts'
import {
  assignGiven,
  contains,
  invalid,
  type Kind,
  longText,
  naturalName,
  optionalId,
  renderUser,
  required,
  text,
  unknownUser,
  type WriteContext,
} from './kind.ts'
import { genderOf } from './names.ts'
import { mergeDetailItems, personDetailAttributes } from './person-details.ts'
import type { PersonRow } from './rows.ts'
import type { View } from './view.ts'

export const GENDERS = [
  'gender_unknown',
  'male_user',
  'female_user',
  'male_auto',
  'female_auto',
  'family_user',
  'family_auto',
] as const

const fields = {
  salutation: text(40),
  title: text(60),
  gender: z
    .union([z.enum(GENDERS), z.number().int().min(0).max(6)])
    .nullable()
    .optional(),
  country_code: text(10),
  first_name: text(60),
  background: longText,
  user_id: optionalId,
  ...reachableAttributes,
  positions_attributes: positionsAttributes,
  ...personDetailAttributes,
}
const createInput = z.object({ ...fields, name: required(80) })
const updateInput = z.object({ ...fields, name: required(80).optional() })
type PersonInput = z.output<typeof updateInput>

const INCLUDES = [
  'positions',
  'companies',
  'tags',
  'avatar',
  'tels',
  'emails',
  'homepages',
  'addrs',
  'custom_fields',
  'connections',
] as const

function applyInput(row: PersonRow, input: PersonInput, context: WriteContext): void {
  const { salutation, title, gender, country_code, first_name, background, user_id, name } = input
  assignGiven(row, { salutation, title, gender, country_code, first_name, background, user_id, name })
  mergeReachable(row, input, context)
  if (input.positions_attributes) {
    row.positions = mergePositions(row.positions ?? [], input.positions_attributes, context)
  }
  const { historic_events_attributes: events, assis_attributes: assis } = input
  if (events) mergeDetailItems(row, 'historic_events', events, context)
  if (assis) mergeDetailItems(row, 'assis', assis, context)
}

function validate(input: PersonInput, context: WriteContext) {
  const unknownCompany = input.positions_attributes?.some(
    (position) => position.company_id && !context.store.companies.rows.has(position.company_id),
  )
  if (unknownCompany) return { positions: ['company does not exist'] }
  return unknownUser(context.store, input.user_id)
}

/** `Frau Dr. Mustermann`, the way salutations are generated from their parts. */
function salutations(row: PersonRow): Record<string, string> {
  const formal = [row.salutation, row.title, row.name].filter(Boolean).join(' ')
  const female = row.salutation === 'Frau' || String(row.gender).startsWith('female') || row.gender === 2
  return {
    salutation_official: `${female ? 'Sehr geehrte' : 'Sehr geehrter'} ${formal}`,
    salutation_formal: `Guten Tag ${formal}`,
    salutation_informal: `${female ? 'Liebe' : 'Lieber'} ${row.first_name ?? row.name}`,
  }
}

export function renderPerson(
  view: View,
  row: PersonRow,
  includes: ReadonlySet<string> = new Set(),
  methods: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: row.id,
    account_id: view.accountId,
    user_id: row.user_id,
    country_code: row.country_code,
    salutation: row.salutation,
    title: row.title,
    gender: row.gender,
    first_name: row.first_name,
    name: row.name,
    background: row.background,
    created_by_user_id: row.created_by_user_id,
    updated_by_user_id: row.updated_by_user_id,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
  renderReachable(view, row, { id: row.id, type: 'Person' }, includes, record)
  if (includes.has('positions')) {
    record.positions = (row.positions ?? []).map((position) => renderPosition(view, position, row.id))
  }
  if (includes.has('companies')) {
    const companies = (row.positions ?? []).flatMap((position) => {
      const company = position.company_id ? view.store.companies.rows.get(position.company_id) : undefined
      return company ? [renderCompany(view, company)] : []
    })
    record.companies = companies
  }
  if (methods.has('responsible_user_natural_name') || methods.has('all')) {
    record.responsible_user_natural_name = naturalName(view.store, row.user_id)
  }
  if (methods.has('all')) {
    Object.assign(record, salutations(row))
    const user = row.user_id === null ? undefined : view.store.users.rows.get(row.user_id)
    record.user = user ? renderUser(user) : null
  }
  return record
}

export const people: Kind<PersonRow> = {
  plural: 'people',
  wrapper: 'person',
  model: 'person',
  attachableType: 'Person',
  includeOptions: INCLUDES,
  rows: (store) => store.people,
  sortName: (row) => `${row.name} ${row.first_name ?? ''}`,
  searchRequires: null,
  matches(row, query) {
    const name = query('name')
    const firstName = query('first_name')
    const phone = query('phone')?.replace(/\D/g, '')
    const email = query('email')
    if (!name && !firstName && !phone && !email) return false
    if (name && !contains(row.name, name)) return false
    if (firstName && !contains(row.first_name, firstName)) return false
    const details = row.details ?? []
    const digits = (name: string) => name.replace(/\D/g, '')
    if (phone && !details.some((d) => d.kind === 'tels' && digits(d.name).includes(phone))) return false
    if (email && !details.some((d) => d.kind === 'emails' && contains(d.name, email))) return false
    return true
  },
  render: renderPerson,
  flat(view, row) {
    const position = row.positions?.find((p) => p.primary_function) ?? row.positions?.[0]
    const company = position?.company_id ? view.store.companies.rows.get(position.company_id) : undefined
    const addr = primaryAddr(row)
    return {
      id: row.id,
      salutation: row.salutation,
      title: row.title,
      first_name: row.first_name,
      last_name: row.name,
      gender: row.gender,
      company: company?.name ?? position?.company_name ?? null,
      position: position?.name ?? null,
      department: position?.department ?? null,
      office_phone: firstDetail(row, 'tels', 'office'),
      mobile_phone: firstDetail(row, 'tels', 'mobile'),
      private_phone: firstDetail(row, 'tels', 'private'),
      fax: firstDetail(row, 'tels', 'fax'),
      email: firstDetail(row, 'emails'),
      homepage: firstDetail(row, 'homepages'),
      street: addr?.street ?? null,
      zip: addr?.zip ?? null,
      city: addr?.city ?? null,
      country: addr?.country_code ?? null,
      background: row.background,
      user_id: row.user_id,
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
    }
  },
  create(input, context) {
    const parsed = createInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = validate(parsed.data, context)
    if (errors) return invalid(errors)
    const { now, actor } = context
    const row: PersonRow = {
      id: context.ids.next('person'),
      user_id: null,
      country_code: null,
      salutation: null,
      title: null,
      gender: genderOf(parsed.data.first_name),
      first_name: null,
      name: parsed.data.name,
      background: null,
      created_by_user_id: actor.userId,
      updated_by_user_id: actor.userId,
      created_at: now,
      updated_at: now,
    }
    applyInput(row, parsed.data, context)
    return { ok: true, row }
  },
  update(row, input, context) {
    const parsed = updateInput.safeParse(input)
    if (!parsed.success) return invalid(parsed.error, input)
    const errors = validate(parsed.data, context)
    if (errors) return invalid(errors)
    applyInput(row, parsed.data, context)
    row.updated_at = context.now
    row.updated_by_user_id = context.actor.userId
    return { ok: true, row }
  },
}
