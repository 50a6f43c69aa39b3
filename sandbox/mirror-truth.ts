// The mirror against the sandbox's truth, as docs/how-sync-works.md defines "in sync": for every
// resource of the table (src/resources) that the sandbox simulates, the live rows are exactly the live
// upstream records, each with the upstream's `updated_at` and field values, each record's child rows
// are its upstream sub-objects, and every record mirrored and since deleted carries `_deleted_at`.
// Tests assert on the differences, the demo and the benchmarks report counts per table.
//
// What is compared comes from the resource table: the tables are the resources' (and their child
// tables), the fields are a resource's plain text columns (no `from`, no `map`) that both the record
// and the payload the row was written from (`_raw`) carry, and the children are the mappings whose items have an `id` and a `name` of their own
// (tags, contact details, positions, custom fields), compared by name, and those of bare ids (a note's
// `person_ids`, as crm.note_links rows), compared by id. Includes of a shape not shown are compared
// whole: an included object in a jsonb column of its own (a person's `avatar`), and the items of a
// mapping of any shape (`connections`), by their `_raw`, in order. Copies of another record's
// fields (a deal's people, a position's company name) and counts derived from other records are not.
// Records are matched by the id the mirror keys them by: a number, or the text id of a resource whose
// `id` column is text (an attachment's `uuid`, while the sandbox's own rows have numbers).
// With `members: true`, the member sets of groups (crm.filter_group_members) too (member-truth.ts); with
// `references: true`, what records name by id (a task's attachable, a deal's people: reference-truth.ts);
// with `details: true`, a person's historic events and assistants, read per person (person-detail-truth.ts).
import { sql } from 'kysely'
import {
  type AnyResource,
  type ChildMapping,
  hasTextId,
  hasUpdatedAt,
  idOf,
  type RecordId,
  resources,
} from '../src/resources/index.ts'
import type { Db } from '../src/store/database.ts'
import { isPlural } from './kinds.ts'
import { compareMembers } from './member-truth.ts'
import { comparePersonDetails } from './person-detail-truth.ts'
import { compareReferences } from './reference-truth.ts'
import { isReservationCollection } from './reservation-kinds.ts'
import type { Sandbox } from './sandbox.ts'
import type { Difference, TableTruth } from './table-truth.ts'

export type { TableTruth } from './table-truth.ts'

type UpstreamRecord = Record<string, unknown>

/** What the sandbox holds of one resource. */
export interface Truth {
  liveIds(): RecordId[]
  get(id: RecordId): UpstreamRecord | undefined
}

/** Whether the sandbox has a kind for the resource (kinds.ts, reservation-kinds.ts): all but crm.users. */
export function simulates(resource: AnyResource): boolean {
  return resource.service === 'crm' ? isPlural(resource.path) : isReservationCollection(resource.path)
}

/** Every resource of the table that the sandbox simulates, in the table's order. */
export const simulatedResources: readonly AnyResource[] = resources.filter(simulates)

/** The sandbox's truth of a simulated resource. */
export function truthOf(sandbox: Pick<Sandbox, 'control'>, resource: AnyResource): Truth {
  const { crm, reservation } = sandbox.control
  const collection = resource.path
  if (resource.service === 'crm' && isPlural(collection) && hasTextId(resource)) {
    // The sandbox's rows have numbers; the mirror keys them by their text id (attachments: `uuid`).
    // `liveIds` reads the records; `get` looks them up in what it read last.
    let byKey = new Map<RecordId, UpstreamRecord>()
    const read = () => {
      byKey = new Map()
      for (const id of crm.liveIds(collection)) {
        const record = crm.get(collection, id)
        const key = record && idOf(resource, record)
        if (record && key !== undefined && key !== null) byKey.set(key, record)
      }
      return [...byKey.keys()]
    }
    return { liveIds: read, get: (id) => byKey.get(id) }
  }
  if (resource.service === 'crm' && isPlural(collection))
    return {
      liveIds: () => crm.liveIds(collection),
      get: (id) => (typeof id === 'number' ? crm.get(collection, id) : undefined),
    }
  if (resource.service === 'reservation' && isReservationCollection(collection))
    return {
      liveIds: () => reservation.liveIds(collection),
      get: (id) => (typeof id === 'number' ? reservation.get(collection, id) : undefined),
    }
  throw new Error(`the sandbox does not simulate ${resource.name}`)
}

export interface CompareOptions {
  /** Which of the simulated resources to compare (default: all). */
  include?: (resource: AnyResource) => boolean
  /** Compare fields and children besides ids and `updated_at` (default true). */
  fields?: boolean
  /** Differences listed per table (default 10). */
  limit?: number
  /** Compare member sets too (crm.filter_group_members; member-truth.ts): they may lag (default false). */
  members?: boolean
  /**
   * Compare references by id too (a task's attachable, a deal's company and people, a person's
   * positions' companies; reference-truth.ts): a merge or destroy moves them silently (default false).
   */
  references?: boolean
  /**
   * Compare a person's historic events and assistants too (crm.historic_events, crm.assistants;
   * person-detail-truth.ts): read per person, they may lag (default false).
   */
  details?: boolean
}

/** Columns compared as fields: plain text columns (see the head of this file). */
export function comparedFields(resource: AnyResource): string[] {
  return Object.entries(resource.columns).flatMap(([name, column]) =>
    column.type === 'text' && !column.from && !column.map ? [name] : [],
  )
}

/** Included objects compared whole: jsonb columns named as one of the resource's includes (`avatar`). */
export function comparedObjects(resource: AnyResource): string[] {
  const includes: readonly string[] = resource.includes
  return Object.entries(resource.columns).flatMap(([name, column]) =>
    column.type === 'jsonb' && !column.from && includes.includes(name) ? [name] : [],
  )
}

/**
 * Child mappings compared: items with an own `id` and a `name`, bare ids, and items of any shape
 * (compared whole). A company's positions are its people's (they change with a person, and nothing
 * tells of the company): derived, not compared. Items read per record on a route of their own (a
 * person's historic events) are compared with `details: true` only.
 */
export function comparedChildren(resource: AnyResource): ChildMapping[] {
  return (resource.children as readonly ChildMapping[]).filter((mapping) => {
    const columns = mapping.child.columns
    if (mapping.key === 'positions' && resource.name !== 'crm.people') return false
    if ('route' in mapping && mapping.route !== undefined) return false
    return (
      mapping.idColumn !== undefined ||
      mapping.anyShape === true ||
      (columns.id !== undefined && !columns.id.from && columns.name !== undefined)
    )
  })
}

/** A JSON value as text with the keys of every object sorted: equal values, equal texts. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`
  }
  return JSON.stringify(value ?? null)
}

/** How an item is told apart: its name, its id (bare ids), or the whole item (any shape). */
function itemLabel(mapping: ChildMapping, item: unknown): string {
  if (mapping.anyShape) return canonical(item)
  return String((mapping.idColumn === undefined ? (item as { name?: unknown } | null)?.name : item) ?? '')
}

type MirrorRow = { id: number | string; updated_at?: Date | null; _deleted_at: Date | null } & UpstreamRecord

/**
 * Labels of a record's children per mapping key, joined: sorted, but in their order for items of any
 * shape (their place is their key).
 */
async function mirrorChildren(db: Db, resource: AnyResource): Promise<Map<string, string>> {
  const found = new Map<string, string[]>()
  const ordered = new Set<string>()
  for (const mapping of comparedChildren(resource)) {
    const { rows } = await sql<{ parent: number | string; name: string | null } & UpstreamRecord>`
      select _parent_id as parent, * from ${sql.table(mapping.child.table)}
      where _parent_resource = ${resource.name} order by _parent_id, _ordinal`.execute(db)
    for (const row of rows) {
      const matches = Object.entries(mapping.defaults ?? {}).every(([key, value]) => row[key] === value)
      if (!matches) continue
      const key = `${row.parent}/${mapping.key}`
      const label = mapping.anyShape
        ? canonical(row._raw)
        : String((mapping.idColumn === undefined ? row.name : row[mapping.idColumn]) ?? '')
      found.set(key, [...(found.get(key) ?? []), label])
    }
    if (mapping.anyShape) ordered.add(mapping.key)
  }
  return new Map(
    [...found].map(([key, labels]) => {
      const mappingKey = key.slice(key.indexOf('/') + 1)
      return [key, (ordered.has(mappingKey) ? labels : labels.sort()).join(',')]
    }),
  )
}

/** The labels of a record's items under a mapping key, joined as mirrorChildren joins them. */
function upstreamChildren(record: UpstreamRecord, mapping: ChildMapping): string {
  const labels = ((record[mapping.key] ?? []) as unknown[]).map((item) => itemLabel(mapping, item))
  return (mapping.anyShape ? labels : labels.sort()).join(',')
}

/** One resource's table against the sandbox. */
export async function compareTable(
  db: Db,
  truth: Truth,
  resource: AnyResource,
  options: CompareOptions = {},
): Promise<TableTruth> {
  const table = resource.name
  const limit = options.limit ?? 10
  const withFields = options.fields ?? true
  const differences: Difference[] = []
  const note = (id: RecordId, what: string) => {
    if (differences.length < limit) differences.push({ table, id, what })
  }
  const { rows } = await sql<MirrorRow>`select * from ${sql.table(table)}`.execute(db)
  const mirror = new Map(
    rows.map((row) => [hasTextId(resource) ? String(row.id) : Number(row.id), row] as const),
  )
  const children = withFields ? await mirrorChildren(db, resource) : new Map<string, string>()
  const fields = withFields ? comparedFields(resource) : []
  const objects = withFields ? comparedObjects(resource) : []
  const mappings = withFields ? comparedChildren(resource) : []
  const live = truth.liveIds()
  let inSync = 0
  for (const id of live) {
    const record = truth.get(id)
    if (!record) continue
    const row = mirror.get(id)
    if (!row || row._deleted_at) {
      note(id, row ? 'tombstoned' : 'missing')
      continue
    }
    let same = true
    // The control API shows some records with more than the index does (a contact's `phone_clean`).
    const raw = typeof row._raw === 'object' && row._raw !== null ? (row._raw as UpstreamRecord) : null
    const differ = (what: string) => {
      same = false
      note(id, what)
    }
    if (hasUpdatedAt(resource) && row.updated_at?.getTime() !== Date.parse(String(record.updated_at)))
      differ(`updated_at ${row.updated_at?.toISOString()} != ${record.updated_at}`)
    for (const field of fields) {
      if (!(field in record) || (raw && !(field in raw))) continue
      if (String(row[field] ?? '') !== String(record[field] ?? '')) differ(`${field} differs`)
    }
    // As a sub-object's difference reads (an include the record carries, whatever `_raw` holds).
    for (const name of objects) {
      if (!(name in record)) continue
      const held = canonical(row[name] ?? null)
      const expected = canonical(record[name] ?? null)
      if (held !== expected) differ(`${name} "${held}" != "${expected}"`)
    }
    for (const mapping of mappings) {
      if (!(mapping.key in record)) continue
      const held = children.get(`${id}/${mapping.key}`) ?? ''
      const expected = upstreamChildren(record, mapping)
      if (held !== expected) differ(`${mapping.key} "${held}" != "${expected}"`)
    }
    if (same) inSync++
  }
  const liveSet = new Set(live)
  let stale = 0
  for (const [id, row] of mirror) {
    if (row._deleted_at || liveSet.has(id)) continue
    stale++
    note(id, 'stale: live in the mirror, deleted upstream')
  }
  return { table, upstream: live.length, inSync, stale, differences }
}

/** Every simulated resource (or those `include` picks), table by table in the table's order. */
export async function compareMirror(
  db: Db,
  sandbox: Pick<Sandbox, 'control'>,
  options: CompareOptions = {},
): Promise<TableTruth[]> {
  const compared: TableTruth[] = []
  for (const resource of simulatedResources) {
    if (options.include && !options.include(resource)) continue
    compared.push(await compareTable(db, truthOf(sandbox, resource), resource, options))
    const members = options.members ? await compareMembers(db, sandbox, resource, options.limit) : null
    if (members) compared.push(members)
  }
  if (options.references) compared.push(...(await compareReferences(db, sandbox, options.limit)))
  if (options.details) compared.push(...(await comparePersonDetails(db, sandbox, options.limit)))
  return compared
}

/** Whether every table is fully in sync. */
export function converged(tables: readonly TableTruth[]): boolean {
  return tables.every((table) => table.inSync === table.upstream && table.stale === 0)
}

/** Differences as lines (`crm.people 42: name differs`), at most `limit` in all. */
export function describe(tables: readonly TableTruth[], limit = 10): string[] {
  return tables
    .flatMap((table) => table.differences.map((d) => `${d.table} ${d.id}: ${d.what}`))
    .slice(0, limit)
}
