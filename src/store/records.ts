// Writes of upstream records into the mirror. One statement per batch: the parent rows and the
// replacement of their children travel together, so a page of 500 records is one round trip.
//
// Ordering rules (DESIGN.md, "Known traps"):
// - A record replaces a live row when its `updated_at` is not older than the row's. Timestamps have
//   whole seconds, so same-second updates are normal: on a tie the newcomer wins, except that a
//   webhook payload never replaces a row that came from the upstream's own answer in that second.
// - A tombstone sticks. Only a record fetched from the upstream *after* the tombstone was written
//   brings the row back (a stale payload, or a page fetched before the delete, cannot).
// - A record that carries the upstream's own soft-delete mark (`deleted_at`) is stored tombstoned.
// - Children of a parent are replaced only when the parent row was written and the record carries
//   every include that feeds that child table; a record without includes leaves children alone.
import { type RawBuilder, sql } from 'kysely'
import { coerce } from '../resources/columns.ts'
import { type ChildTable, type Columns, hasUpdatedAt, type Resource } from '../resources/index.ts'
import type { Db } from './database.ts'

export type UpstreamRecord = Record<string, unknown>

export type RecordOrigin =
  /** The upstream's answer to a request sent at `fetchedAt` (show or index page). */
  | { source: 'fetch'; fetchedAt: Date }
  /** A webhook payload. */
  | { source: 'payload' }

export interface UpsertResult {
  /** Ids whose rows were written. */
  applied: number[]
  /** Ids whose rows were newer (or tombstoned) and kept. */
  ignored: number[]
}

export class InvalidRecordError extends Error {
  override name = 'InvalidRecordError'
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`
const table = (qualified: string) => qualified.split('.').map(quote).join('.')
const columnList = (names: string[], prefix = '') => names.map((name) => prefix + quote(name)).join(', ')
const recordsetColumns = (columns: Columns) =>
  Object.entries(columns)
    .map(([name, column]) => `${quote(name)} ${column.type}`)
    .join(', ')

function columnValues(columns: Columns, source: UpstreamRecord, defaults?: Record<string, unknown>) {
  const row: Record<string, unknown> = {}
  for (const [name, column] of Object.entries(columns)) {
    const key = column.from ?? name
    const raw = key in source ? source[key] : defaults?.[name]
    row[name] = coerce(column.type, column.map ? column.map(raw) : raw)
  }
  return row
}

function recordId(resource: Resource, record: UpstreamRecord): number {
  const id = coerce('bigint', record.id)
  if (typeof id !== 'number') {
    throw new InvalidRecordError(
      `${resource.name}: a record without a usable id (${JSON.stringify(record.id)})`,
    )
  }
  return id
}

/** Keeps one record per id: the newest by `updated_at`, the later one on a tie. */
function newestPerId(resource: Resource, records: UpstreamRecord[]): Map<number, UpstreamRecord> {
  const byId = new Map<number, UpstreamRecord>()
  const ordered = hasUpdatedAt(resource)
  for (const record of records) {
    const id = recordId(resource, record)
    const updatedAt = ordered ? coerce('timestamptz', record.updated_at) : null
    if (ordered && updatedAt === null) {
      throw new InvalidRecordError(`${resource.name} ${id}: updated_at is missing or unparsable`)
    }
    const previous = byId.get(id)
    if (previous && ordered && Date.parse(String(previous.updated_at)) > Date.parse(String(updatedAt)))
      continue
    byId.set(id, record)
  }
  return byId
}

interface ChildBatch {
  child: ChildTable
  parentIds: number[]
  rows: Record<string, unknown>[]
}

function childBatches(resource: Resource, records: Map<number, UpstreamRecord>): ChildBatch[] {
  const batches = new Map<ChildTable, ChildBatch>()
  for (const mapping of resource.children) {
    if (!batches.has(mapping.child))
      batches.set(mapping.child, { child: mapping.child, parentIds: [], rows: [] })
  }
  for (const [parentId, record] of records) {
    for (const batch of batches.values()) {
      const mappings = resource.children.filter((mapping) => mapping.child === batch.child)
      if (!mappings.every((mapping) => mapping.key in record)) continue
      batch.parentIds.push(parentId)
      let ordinal = 0
      for (const mapping of mappings) {
        const items = record[mapping.key]
        if (!Array.isArray(items)) continue
        for (const item of items) {
          if (typeof item !== 'object' || item === null) continue
          const row = columnValues(batch.child.columns, item as UpstreamRecord, mapping.defaults)
          if (batch.child.parentColumn) row[batch.child.parentColumn] = parentId
          batch.rows.push({ ...row, _parent_id: parentId, _ordinal: ordinal++, _raw: item })
        }
      }
    }
  }
  return [...batches.values()]
}

function softDeletedAt(resource: Resource, record: UpstreamRecord, now: Date): string | null {
  if (!resource.softDeleteKey) return null
  const mark = record[resource.softDeleteKey]
  if (mark === undefined || mark === null || mark === false) return null
  return (coerce('timestamptz', mark) as string | null) ?? now.toISOString()
}

function applyRule(resource: Resource, fetchedAt: string | null): RawBuilder<unknown> {
  // t: the row in the mirror; excluded: the incoming record; fetchedAt: when its request was sent.
  const liveRowAccepts = hasUpdatedAt(resource)
    ? sql`(t.updated_at is null or excluded.updated_at > t.updated_at
          or (excluded.updated_at = t.updated_at and not (excluded._source = 'payload' and t._source = 'fetch')))`
    : sql`not (excluded._source = 'payload' and t._source = 'fetch')`
  return sql`(t._deleted_at is null and ${liveRowAccepts})
    or (t._deleted_at is not null and ${fetchedAt}::timestamptz > t._deleted_at)
    or (t._deleted_at is not null and excluded._deleted_at is not null and ${liveRowAccepts})`
}

/**
 * Upserts a batch of records of one resource with their children, in one statement.
 * `records` are unwrapped upstream records; the full record is kept in `_raw`.
 */
export async function upsertRecords(
  db: Db,
  resource: Resource,
  records: UpstreamRecord[],
  origin: RecordOrigin,
): Promise<UpsertResult> {
  if (records.length === 0) return { applied: [], ignored: [] }
  const now = new Date()
  const newest = newestPerId(resource, records)
  const names = Object.keys(resource.columns)
  // A tombstone is compared with the time the request for a fetched record was sent.
  const fetchedAt = origin.source === 'fetch' ? origin.fetchedAt.toISOString() : null
  const rows = [...newest.values()].map((record) => ({
    ...columnValues(resource.columns, record),
    _raw: record,
    _deleted_at: softDeletedAt(resource, record, now),
  }))

  const children = childBatches(resource, newest).map((batch, index) => {
    const columns = Object.keys(batch.child.columns)
    const target = sql.raw(table(batch.child.table))
    const deleted = sql.raw(`deleted_${index}`)
    const inserted = sql.raw(`inserted_${index}`)
    return sql`,
      ${deleted} as (
        delete from ${target} c using upserted u
        where c._parent_resource = ${resource.name} and c._parent_id = u.id
          and u.id = any(${batch.parentIds}::bigint[])
      ),
      ${inserted} as (
        insert into ${target} (_parent_resource, _parent_id, _ordinal, ${sql.raw(columnList(columns))}, _raw)
        select ${resource.name}, y._parent_id, y._ordinal, ${sql.raw(columnList(columns, 'y.'))}, y._raw
        from json_to_recordset(${JSON.stringify(batch.rows)}::json)
          as y(_parent_id bigint, _ordinal integer, ${sql.raw(recordsetColumns(batch.child.columns))}, _raw jsonb)
        join upserted u on u.id = y._parent_id
      )`
  })

  // `_fetched_at` is the time of the request whose answer wrote the row; a payload keeps the row's.
  const updates = [...names.filter((name) => name !== 'id'), '_raw', '_synced_at', '_deleted_at', '_source']
    .map((name) => `${quote(name)} = excluded.${quote(name)}`)
    .concat('_fetched_at = coalesce(excluded._fetched_at, t._fetched_at)')
    .join(', ')

  const result = await sql<{ id: number }>`
    with input as (
      select * from json_to_recordset(${JSON.stringify(rows)}::json)
        as x(${sql.raw(recordsetColumns(resource.columns))}, _raw jsonb, _deleted_at timestamptz)
    ),
    upserted as (
      insert into ${sql.raw(table(resource.name))} as t (${sql.raw(columnList(names))}, _raw, _synced_at, _deleted_at, _source, _fetched_at)
      select ${sql.raw(columnList(names))}, _raw, now(), _deleted_at, ${origin.source}, ${fetchedAt}::timestamptz
      from input
      on conflict (id) do update set ${sql.raw(updates)}
      where ${applyRule(resource, fetchedAt)}
      returning t.id
    )${sql.join(children, sql``)}
    select id from upserted
  `.execute(db)

  const applied = result.rows.map((row) => row.id)
  const written = new Set(applied)
  return { applied, ignored: [...newest.keys()].filter((id) => !written.has(id)) }
}

/**
 * Marks rows deleted as of `at`. Ids never mirrored get a placeholder row, so that a stale payload
 * arriving later cannot create them. Returns the ids that were live (or unknown) before.
 * `fetched`: the upstream answered 404 to a request sent at `at`, which is then the row's `_fetched_at`.
 */
export async function tombstone(
  db: Db,
  resource: Resource,
  ids: number[],
  at: Date = new Date(),
  options: { fetched?: boolean } = {},
): Promise<number[]> {
  if (ids.length === 0) return []
  const fetchedAt = options.fetched ? at.toISOString() : null
  const result = await sql<{ id: number }>`
    insert into ${sql.raw(table(resource.name))} as t (id, _deleted_at, _synced_at, _fetched_at)
    select distinct unnest(${ids}::bigint[]), ${at.toISOString()}::timestamptz, now(), ${fetchedAt}::timestamptz
    on conflict (id) do update set _deleted_at = excluded._deleted_at, _synced_at = now(),
      _fetched_at = coalesce(excluded._fetched_at, t._fetched_at)
    where t._deleted_at is null
    returning t.id
  `.execute(db)
  return result.rows.map((row) => row.id)
}

/** The `updated_at` of the row a record would land on, or null when there is none (or no such column). */
export async function readUpdatedAt(
  db: Db,
  resource: Resource,
  record: UpstreamRecord,
): Promise<Date | null> {
  if (!hasUpdatedAt(resource)) return null
  const id = recordId(resource, record)
  const result = await sql<{ updated_at: Date | null }>`
    select updated_at from ${sql.raw(table(resource.name))} where id = ${id}
  `.execute(db)
  return result.rows[0]?.updated_at ?? null
}
