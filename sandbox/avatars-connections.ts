// The avatar and the connections of people and companies: changes to them, as a user of the upstream's
// UI makes them (the control API; no route of the API is simulated). Their shapes are not shown
// upstream: see AvatarRow and ConnectionRow (rows.ts), rendered in child-views.ts. What the upstream
// does with a connection to a record deleted since is not shown either: it stays.
import type { WriteContext } from './kind.ts'
import type { AvatarRow, ConnectionRow, Reachable } from './rows.ts'

export interface AvatarInput {
  filename: string
  content_type?: string
  /** Bytes. */
  size?: number
}

/** A link to a live person or company under a label, or a profile on a network. */
export type ConnectionInput =
  | { to: { type: 'Person' | 'Company'; id: number }; name: string }
  | { network: string; url: string }

export interface ConnectionChange {
  /** A link's new label. */
  name?: string
  /** A profile's new address. */
  url?: string
}

const CONTENT_TYPES: Record<string, string> = { png: 'image/png', gif: 'image/gif', webp: 'image/webp' }

/** A new picture, replacing the one before (a new upload: a new id), or none. */
export function setAvatar(
  row: Reachable,
  input: AvatarInput | null,
  context: WriteContext,
): AvatarRow | null {
  if (input === null) {
    row.avatar = null
    return null
  }
  const extension = input.filename.split('.').pop()?.toLowerCase() ?? ''
  row.avatar = {
    id: context.ids.next('avatar'),
    filename: input.filename,
    content_type: input.content_type ?? CONTENT_TYPES[extension] ?? 'image/jpeg',
    size: input.size ?? 24_576,
    created_at: context.now,
    updated_at: context.now,
  }
  return row.avatar
}

/** A connection added at the end; null when it links to no live person or company. */
export function addConnection(
  row: Reachable,
  input: ConnectionInput,
  context: WriteContext,
): ConnectionRow | null {
  const stamps = { id: context.ids.next('connection'), created_at: context.now, updated_at: context.now }
  let connection: ConnectionRow
  if ('network' in input) {
    connection = { ...stamps, kind: 'network', network: input.network, url: input.url }
  } else {
    const rows = input.to.type === 'Person' ? context.store.people : context.store.companies
    if (!rows.rows.has(input.to.id)) return null
    connection = {
      ...stamps,
      kind: 'record',
      connectable_type: input.to.type,
      connectable_id: input.to.id,
      name: input.name,
    }
  }
  row.connections = [...(row.connections ?? []), connection]
  return connection
}

/** The connection at `position` changed in place; null when there is none there. */
export function updateConnection(
  row: Reachable,
  position: number,
  change: ConnectionChange,
  context: WriteContext,
): ConnectionRow | null {
  const connection = position >= 0 ? row.connections?.[position] : undefined
  if (!connection) return null
  if (connection.kind === 'record' && change.name !== undefined) connection.name = change.name
  if (connection.kind === 'network' && change.url !== undefined) connection.url = change.url
  connection.updated_at = context.now
  return connection
}

/** The connection at `position` removed; null when there is none there. */
export function removeConnection(row: Reachable, position: number): ConnectionRow | null {
  if (position < 0 || !row.connections?.[position]) return null
  return row.connections.splice(position, 1)[0] ?? null
}
