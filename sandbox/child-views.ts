// How the sub-objects of people, companies, deals and projects (tags, addresses, contact details,
// positions, avatars, connections) appear in a record's includes and on their own routes.
import type {
  AddrRow,
  AttachableType,
  AvatarRow,
  ConnectionRow,
  DetailKind,
  DetailRow,
  PositionRow,
  Reachable,
  TagRow,
} from './rows.ts'
import type { View } from './view.ts'

export interface Owner {
  id: number
  type: AttachableType
}

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

/** An avatar as the include `avatar` shows it (its fields are not shown upstream: plausible ones). */
export function renderAvatar(view: View, avatar: AvatarRow, owner: Owner): Record<string, unknown> {
  const file = `https://files.sandbox.example/avatars/${avatar.id}`
  return {
    id: avatar.id,
    account_id: view.accountId,
    attachable_id: owner.id,
    attachable_type: owner.type,
    content_type: avatar.content_type,
    file_file_name: avatar.filename,
    file_file_size: avatar.size,
    url: `${file}/original/${encodeURIComponent(avatar.filename)}`,
    thumb_url: `${file}/thumb/${encodeURIComponent(avatar.filename)}`,
    created_at: view.time(avatar.created_at),
    updated_at: view.time(avatar.updated_at),
  }
}

/**
 * An entry of `connections` (its shape is not shown upstream): a link to a record with an id and stamps,
 * or a network profile with neither.
 */
export function renderConnection(
  view: View,
  connection: ConnectionRow,
  owner: Owner,
): Record<string, unknown> {
  if (connection.kind === 'network') return { network: connection.network, url: connection.url }
  return {
    id: connection.id,
    account_id: view.accountId,
    attachable_id: owner.id,
    attachable_type: owner.type,
    connectable_id: connection.connectable_id,
    connectable_type: connection.connectable_type,
    name: connection.name,
    created_at: view.time(connection.created_at),
    updated_at: view.time(connection.updated_at),
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
  if (includes.has('avatar')) record.avatar = row.avatar ? renderAvatar(view, row.avatar, owner) : null
  for (const kind of ['tels', 'emails', 'homepages'] as const) {
    if (!includes.has(kind)) continue
    const details = (row.details ?? []).filter((detail) => detail.kind === kind)
    record[kind] = details.map((detail) => renderDetail(view, detail, owner))
  }
  if (includes.has('addrs')) record.addrs = (row.addrs ?? []).map((addr) => renderAddr(view, addr, owner))
  if (includes.has('custom_fields')) record.custom_fields = []
  if (includes.has('connections')) {
    record.connections = (row.connections ?? []).map((connection) =>
      renderConnection(view, connection, owner),
    )
  }
}

/** The first detail of a kind (and type), for `flat` payloads. */
export function firstDetail(row: Reachable, kind: DetailKind, atype?: string): string | null {
  const detail = row.details?.find((d) => d.kind === kind && (atype === undefined || d.atype === atype))
  return detail?.name ?? null
}

export function primaryAddr(row: Reachable): AddrRow | undefined {
  return row.addrs?.find((addr) => addr.primary) ?? row.addrs?.[0]
}
