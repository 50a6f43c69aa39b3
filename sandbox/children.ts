// Sub-objects of people, companies, deals and projects: tags, addresses, contact details and
// positions. Their input schemas (nested attributes and their own routes) and merges; their
// renderers are in child-views.ts.
import { z } from 'zod'
import { flag, id, optionalId, required, text, type WriteContext } from './kind.ts'
import { COUNTRY_NAMES } from './names.ts'
import type { AddrRow, DetailKind, PositionRow, Reachable, Tagged, TagRow } from './rows.ts'

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
