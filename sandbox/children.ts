// Sub-objects of people, companies, deals and projects: tags, addresses, contact details and
// positions. Their input schemas (nested attributes and their own routes), merges and renderers.
import { z } from 'zod'
import { flag, id, optionalId, required, text, type WriteContext } from './kind.ts'
import { COUNTRY_NAMES } from './names.ts'
import type {
  AddrRow,
  AttachableType,
  DetailKind,
  DetailRow,
  PositionRow,
  Reachable,
  Tagged,
  TagRow,
} from './store.ts'
import type { View } from './view.ts'

export interface Owner {
  id: number
  type: AttachableType
}

/** Nested attributes come as an object keyed by index strings; an array is accepted too. */
export function nested<T extends z.ZodType>(entry: T) {
  return z
    .union([z.array(entry), z.record(z.string(), entry)])
    .transform((value): z.output<T>[] => (Array.isArray(value) ? value : Object.values(value)))
}

export const tagInput = z.object({ id: id.optional(), name: required(60) })
export const ADDR_TYPES = ['work_hq', 'work', 'invoice', 'delivery', 'private', 'other'] as const
const addrFields = {
  id: id.optional(),
  zip: text(20),
  city: text(120),
  country: text(60),
  country_code: text(2),
  state_code: text(10),
  atype: z.enum(ADDR_TYPES).nullable().optional(),
  primary: flag.nullable().optional(),
}
/** The addr route requires a street; nested attributes do not. */
export const addrInput = z.object({ ...addrFields, street: z.string() })
const addrEntry = z.object({ ...addrFields, street: z.string().nullable().optional() })
const detailEntry = z.object({ id: id.optional(), name: required(255), atype: text(20) })
const positionEntry = z.object({
  id: id.optional(),
  company_id: optionalId,
  company_name: text(120),
  name: text(120),
  department: text(120),
  primary_function: flag.optional(),
  former: flag.optional(),
})

export const reachableAttributes = {
  tags_attributes: nested(tagInput).optional(),
  addrs_attributes: nested(addrEntry).optional(),
  tels_attributes: nested(detailEntry).optional(),
  emails_attributes: nested(detailEntry).optional(),
  homepages_attributes: nested(detailEntry).optional(),
}
export const positionsAttributes = nested(positionEntry).optional()

type TagInput = z.output<typeof tagInput>
type AddrInput = z.output<typeof addrEntry>
type DetailInput = z.output<typeof detailEntry>
type PositionInput = z.output<typeof positionEntry>

// ---- merges -----------------------------------------------------------------------------------

export function mergeTags(row: Tagged, entries: readonly TagInput[], context: WriteContext): TagRow[] {
  const tags = row.tags ?? []
  const added: TagRow[] = []
  for (const entry of entries) {
    const existing = entry.id ? tags.find((tag) => tag.id === entry.id) : undefined
    if (existing) {
      existing.name = entry.name
      existing.updated_at = context.now
    } else if (!tags.some((tag) => tag.name.toLowerCase() === entry.name.toLowerCase())) {
      const { now, actor } = context
      const tag = {
        id: context.ids.next('tag'),
        name: entry.name,
        api_input: actor.api,
        created_at: now,
        updated_at: now,
      }
      tags.push(tag)
      added.push(tag)
    }
  }
  row.tags = tags
  return added
}

function addrFieldsOf(entry: AddrInput): Partial<AddrRow> {
  const code = entry.country_code ?? (entry.country && entry.country.length === 2 ? entry.country : undefined)
  const countryCode = code?.toUpperCase()
  return {
    street: entry.street ?? undefined,
    zip: entry.zip ?? undefined,
    city: entry.city ?? undefined,
    state_code: entry.state_code,
    country_code: countryCode,
    country_name: countryCode ? (COUNTRY_NAMES[countryCode] ?? entry.country ?? null) : undefined,
    atype: entry.atype,
    primary: entry.primary,
  }
}

export function mergeAddrs(row: Reachable, entries: readonly AddrInput[], context: WriteContext): AddrRow[] {
  const addrs = row.addrs ?? []
  const touched: AddrRow[] = []
  for (const entry of entries) {
    const fields = definedOnly(addrFieldsOf(entry))
    const existing = entry.id ? addrs.find((addr) => addr.id === entry.id) : undefined
    if (existing) {
      Object.assign(existing, fields, { updated_at: context.now })
      touched.push(existing)
      continue
    }
    const addr: AddrRow = {
      id: context.ids.next('addr'),
      atype: 'work',
      primary: null,
      street: '',
      zip: '',
      city: '',
      state_code: null,
      country_code: null,
      country_name: null,
      ...fields,
      created_at: context.now,
      updated_at: context.now,
    }
    addrs.push(addr)
    touched.push(addr)
  }
  row.addrs = addrs
  return touched
}

export function mergeDetails(
  row: Reachable,
  kind: DetailKind,
  entries: readonly DetailInput[],
  context: WriteContext,
): void {
  const details = row.details ?? []
  for (const entry of entries) {
    const existing = entry.id ? details.find((detail) => detail.id === entry.id) : undefined
    if (existing) {
      existing.name = entry.name
      if (entry.atype) existing.atype = entry.atype
      existing.updated_at = context.now
      continue
    }
    details.push({
      id: context.ids.next('detail'),
      kind,
      atype: entry.atype ?? (kind === 'tels' ? 'office' : kind === 'emails' ? 'office' : 'work'),
      name: entry.name,
      primary: !details.some((detail) => detail.kind === kind),
      api_input: context.actor.api,
      created_at: context.now,
      updated_at: context.now,
    })
  }
  row.details = details
}

export function mergePositions(
  positions: PositionRow[],
  entries: readonly PositionInput[],
  context: WriteContext,
): PositionRow[] {
  for (const entry of entries) {
    const company = entry.company_id ? context.store.companies.rows.get(entry.company_id) : undefined
    const fields = definedOnly({
      company_id: entry.company_id,
      company_name: company?.name ?? entry.company_name,
      name: entry.name,
      department: entry.department,
      primary_function: entry.primary_function,
      former: entry.former,
    })
    const existing = entry.id ? positions.find((position) => position.id === entry.id) : undefined
    if (existing) {
      Object.assign(existing, fields, { updated_at: context.now })
      continue
    }
    positions.push({
      id: context.ids.next('position'),
      company_id: null,
      company_name: null,
      name: null,
      department: null,
      primary_function: positions.length === 0,
      former: false,
      ...fields,
      created_at: context.now,
      updated_at: context.now,
    })
  }
  return positions
}

/** Applies the nested attributes people and companies share. */
export function mergeReachable(
  row: Reachable,
  input: {
    tags_attributes?: TagInput[]
    addrs_attributes?: AddrInput[]
    tels_attributes?: DetailInput[]
    emails_attributes?: DetailInput[]
    homepages_attributes?: DetailInput[]
  },
  context: WriteContext,
): void {
  if (input.tags_attributes) mergeTags(row, input.tags_attributes, context)
  if (input.addrs_attributes) mergeAddrs(row, input.addrs_attributes, context)
  if (input.tels_attributes) mergeDetails(row, 'tels', input.tels_attributes, context)
  if (input.emails_attributes) mergeDetails(row, 'emails', input.emails_attributes, context)
  if (input.homepages_attributes) mergeDetails(row, 'homepages', input.homepages_attributes, context)
}

function definedOnly<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>
}

// ---- renderers --------------------------------------------------------------------------------

export function renderTag(view: View, tag: TagRow, owner: Owner): Record<string, unknown> {
  return {
    id: tag.id,
    account_id: view.accountId,
    attachable_id: owner.id,
    attachable_type: owner.type,
    api_input: tag.api_input,
    name: tag.name,
    created_at: view.time(tag.created_at),
    updated_at: view.time(tag.updated_at),
  }
}

export function renderAddr(view: View, addr: AddrRow, owner: Owner): Record<string, unknown> {
  return {
    id: addr.id,
    attachable_id: owner.id,
    attachable_type: owner.type,
    street: addr.street,
    zip: addr.zip,
    city: addr.city,
    state_code: addr.state_code,
    country_code: addr.country_code,
    primary: addr.primary,
    atype: addr.atype,
    country_name: addr.country_name,
    created_at: view.time(addr.created_at),
    updated_at: view.time(addr.updated_at),
  }
}

const DETAIL_TYPES: Record<DetailKind, string> = { tels: 'Tel', emails: 'Email', homepages: 'Homepage' }

export function renderDetail(view: View, detail: DetailRow, owner: Owner): Record<string, unknown> {
  return {
    id: detail.id,
    type: DETAIL_TYPES[detail.kind],
    attachable_id: owner.id,
    attachable_type: owner.type,
    atype: detail.atype,
    name: detail.name,
    primary: detail.primary,
    name_clean: cleanDetail(detail),
    api_input: detail.api_input,
    created_at: view.time(detail.created_at),
    updated_at: view.time(detail.updated_at),
  }
}

function cleanDetail(detail: DetailRow): string {
  if (detail.kind === 'tels') return cleanPhone(detail.name) ?? ''
  return detail.name.trim().toLowerCase()
}

/** `0341 12345` → `+4934112345`, the way the upstream normalises German numbers. */
export function cleanPhone(phone: string | null): string | null {
  if (!phone) return null
  const digits = phone.replace(/[^\d+]/g, '')
  if (digits.startsWith('+')) return digits
  if (digits.startsWith('00')) return `+${digits.slice(2)}`
  return digits.startsWith('0') ? `+49${digits.slice(1)}` : digits
}

export function renderPosition(view: View, position: PositionRow, personId: number): Record<string, unknown> {
  const company = position.company_id ? view.store.companies.rows.get(position.company_id) : undefined
  return {
    id: position.id,
    account_id: view.accountId,
    person_id: personId,
    company_id: position.company_id,
    company_name: company?.name ?? position.company_name,
    name: position.name,
    department: position.department,
    primary_function: position.primary_function,
    former: position.former,
    created_at: view.time(position.created_at),
    updated_at: view.time(position.updated_at),
  }
}

/** The includes people and companies share, added to `record` in place. */
export function renderReachable(
  view: View,
  row: Reachable,
  owner: Owner,
  includes: ReadonlySet<string>,
  record: Record<string, unknown>,
): void {
  if (includes.has('tags')) record.tags = (row.tags ?? []).map((tag) => renderTag(view, tag, owner))
  if (includes.has('avatar')) record.avatar = null
  for (const kind of ['tels', 'emails', 'homepages'] as const) {
    if (!includes.has(kind)) continue
    const details = (row.details ?? []).filter((detail) => detail.kind === kind)
    record[kind] = details.map((detail) => renderDetail(view, detail, owner))
  }
  if (includes.has('addrs')) record.addrs = (row.addrs ?? []).map((addr) => renderAddr(view, addr, owner))
  if (includes.has('custom_fields')) record.custom_fields = []
  if (includes.has('connections')) record.connections = []
}

/** The first detail of a kind (and type), for `flat` payloads. */
export function firstDetail(row: Reachable, kind: DetailKind, atype?: string): string | null {
  const detail = row.details?.find((d) => d.kind === kind && (atype === undefined || d.atype === atype))
  return detail?.name ?? null
}

export function primaryAddr(row: Reachable): AddrRow | undefined {
  return row.addrs?.find((addr) => addr.primary) ?? row.addrs?.[0]
}
