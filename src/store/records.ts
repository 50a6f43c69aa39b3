// Writes of upstream records into the mirror. At most two statements per batch, whatever its size:
// the parent rows, then the replacement of the children of the parents written whose includes changed.
//
// Ordering rules (DESIGN.md, "Known traps"):
// - A record replaces a live row when its `updated_at` is not older than the row's. Timestamps have
//   whole seconds, so same-second updates are normal: on a tie the newcomer wins, except that a
//   webhook payload never replaces a row that came from the upstream's own answer in that second,
//   and an answer never replaces one to a request sent after its own.
// - A tombstone sticks. Only a record fetched from the upstream *after* the tombstone was written
//   brings the row back (a stale payload, or a page fetched before the delete, cannot).
// - A record that carries the upstream's own soft-delete mark (`deleted_at`) is stored tombstoned.
// - Children of a parent are replaced only when the parent row was written and the record carries
//   every include that feeds that child table; a record without includes leaves children alone.
//   A replacement ends with exactly the rows a delete-and-insert would leave, but an existing row
//   whose values (every column and `_raw`, byte for byte) are those of the incoming row at its
//   `_ordinal` is kept as it is (its `_synced_at` too); the others are deleted, the rest inserted.
//   A table whose includes are byte for byte those of the parent row replaced is not touched. So a
//   change to how child rows derive from items (columns, coercion, mappings) must come with a
//   migration that rewrites them: equal includes no longer do.
import { type RawBuilder, sql } from 'kysely'
import { coerce, type SqlType } from '../resources/columns.ts'
import {
  type ChildMapping,
  type ChildTable,
  type Columns,
  hasUpdatedAt,
  type Resource,
} from '../resources/index.ts'
import type { Db } from './database.ts'
import { serialize, storable, storableText } from './jsonb.ts'

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
  /** Of `applied`, the ids that had no row before (inserted, not updated). */
  inserted: number[]
}

export class InvalidRecordError extends Error {
  override name = 'InvalidRecordError'
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`
const table = (qualified: string) => qualified.split('.').map(quote).join('.')
const columnList = (names: string[], prefix = '') => names.map((name) => prefix + quote(name)).join(', ')

// Rows travel column by column: one array parameter per column, zipped back into rows by
// `rows from (unnest(...), ...)`. PostgreSQL parses a typed array far faster than a JSON recordset.
// The records themselves travel once, as one JSON array: the parents' `_raw` are its elements and
// a child's `_raw` is taken out of its parent's (`_raw -> key -> index`), never sent again.
// Children are replaced only for parents the upsert wrote (`parents`): their rows are read once
// through the (_parent_resource, _parent_id) index, whatever the size of the table; the ones equal to
// an incoming row are kept (one per place), the others deleted by ctid, the incoming rows not kept
// inserted.

interface ColumnSpec {
  name: string
  type: SqlType
  key: string
  map: ((value: unknown) => unknown) | undefined
}

const specCache = new WeakMap<Columns, ColumnSpec[]>()
function columnSpecs(columns: Columns): ColumnSpec[] {
  let specs = specCache.get(columns)
  if (!specs) {
    specs = Object.entries(columns).map(([name, column]) => ({
      name,
      type: column.type,
      key: column.from ?? name,
      map: column.map,
    }))
    specCache.set(columns, specs)
  }
  return specs
}

/**
 * Coerces column values; a timestamp or date string seen before in the batch is not parsed again
 * (children mostly carry their parent's stamps). `coerce` is pure, so the cache changes nothing else.
 */
function coercer(): (type: SqlType, value: unknown) => unknown {
  const seen = { timestamptz: new Map<string, unknown>(), date: new Map<string, unknown>() }
  return (type, value) => {
    if (typeof value !== 'string' || (type !== 'timestamptz' && type !== 'date')) return coerce(type, value)
    const cache = seen[type]
    let coerced = cache.get(value)
    if (coerced === undefined) {
      coerced = coerce(type, value)
      cache.set(value, coerced)
    }
    return coerced
  }
}

type Coerce = ReturnType<typeof coercer>

// The array parameters are written here as PostgreSQL array literals (what node-postgres would make
// of a JavaScript array, without its per-element escaping passes): every string quoted, `\` and `"`
// escaped, numbers and booleans as they print, null as NULL.
const NEEDS_ESCAPE = /["\\]/
const quoteElement = (text: string) => `"${NEEDS_ESCAPE.test(text) ? text.replace(/["\\]/g, '\\$&') : text}"`

/** A coerced value as an element of an array literal (jsonb as its JSON text). */
function arrayElement(type: SqlType, coerced: unknown): string {
  if (coerced === null || coerced === undefined) return 'NULL'
  if (type === 'jsonb') return quoteElement(JSON.stringify(coerced))
  if (typeof coerced === 'string') return quoteElement(coerced)
  return String(coerced)
}

const arrayLiteral = (elements: (string | number)[]) => `{${elements.join(',')}}`

/** Appends the coerced value of every column of `source` to that column's array of elements. */
function pushColumns(
  specs: ColumnSpec[],
  arrays: string[][],
  source: UpstreamRecord,
  convert: Coerce,
  defaults?: Record<string, unknown>,
) {
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as ColumnSpec
    const raw = spec.key in source ? source[spec.key] : defaults?.[spec.name]
    ;(arrays[i] as string[]).push(arrayElement(spec.type, convert(spec.type, spec.map ? spec.map(raw) : raw)))
  }
}

/** `unnest($1::bigint[]), unnest($2::text[]), ...` of the given arrays of elements. */
function unnests(specs: { type: SqlType }[], arrays: string[][]): RawBuilder<unknown>[] {
  return specs.map((spec, i) => sql`unnest(${arrayLiteral(arrays[i] as string[])}::${sql.raw(spec.type)}[])`)
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
function newestPerId(
  resource: Resource,
  records: UpstreamRecord[],
  convert: Coerce,
): Map<number, UpstreamRecord> {
  const byId = new Map<number, UpstreamRecord>()
  const ordered = hasUpdatedAt(resource)
  for (const record of records) {
    const id = recordId(resource, record)
    const updatedAt = ordered ? convert('timestamptz', record.updated_at) : null
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
  mappings: ChildMapping[]
  specs: ColumnSpec[]
  /** Parents whose records carry every include that feeds the table: their children are replaced. */
  parentIds: number[]
  // One entry per child row:
  rowParents: number[]
  ordinals: number[]
  /** Where the item sits in its parent's record: `_raw -> key -> index`. */
  /** (quoted, as array elements) */
  keys: string[]
  indexes: number[]
  /** One array of elements per column of the child table. */
  columns: string[][]
}

/** The child tables of a resource, each with the mappings (include keys) that feed it, in a fixed order. */
function includesByTable(resource: Resource): { child: ChildTable; keys: string[] }[] {
  const tables = new Map<ChildTable, string[]>()
  for (const mapping of resource.children)
    tables.set(mapping.child, [...(tables.get(mapping.child) ?? []), mapping.key])
  return [...tables].map(([child, keys]) => ({ child, keys }))
}

/**
 * The rows of every child table for the parents in `replace` (per child table, the ids whose
 * children are replaced; the records carry every include that feeds the table).
 */
function childBatches(
  resource: Resource,
  records: Map<number, UpstreamRecord>,
  replace: Map<ChildTable, number[]>,
  convert: Coerce,
): ChildBatch[] {
  const batches = new Map<ChildTable, ChildBatch>()
  for (const mapping of resource.children) {
    let batch = batches.get(mapping.child)
    if (!batch) {
      const specs = columnSpecs(mapping.child.columns)
      batch = {
        child: mapping.child,
        mappings: [],
        specs,
        parentIds: [],
        rowParents: [],
        ordinals: [],
        keys: [],
        indexes: [],
        columns: specs.map(() => []),
      }
      batches.set(mapping.child, batch)
    }
    batch.mappings.push(mapping)
  }
  for (const batch of batches.values()) {
    for (const parentId of replace.get(batch.child) ?? []) {
      const record = records.get(parentId) as UpstreamRecord
      batch.parentIds.push(parentId)
      const parentColumn = batch.child.parentColumn
      const parentArray = parentColumn
        ? batch.columns[batch.specs.findIndex((spec) => spec.name === parentColumn)]
        : undefined
      let ordinal = 0
      for (const mapping of batch.mappings) {
        const items = record[mapping.key]
        if (!Array.isArray(items)) continue
        for (let index = 0; index < items.length; index++) {
          const item: unknown = items[index]
          if (typeof item !== 'object' || item === null) continue
          pushColumns(batch.specs, batch.columns, item as UpstreamRecord, convert, mapping.defaults)
          if (parentArray) parentArray[parentArray.length - 1] = String(parentId)
          batch.rowParents.push(parentId)
          batch.ordinals.push(ordinal++)
          batch.keys.push(quoteElement(mapping.key))
          batch.indexes.push(index)
        }
      }
    }
  }
  return [...batches.values()]
}

/**
 * `c.name::type as name, ...`: the table's columns as the types the incoming rows have
 * (record_image_eq compares only like types; a cast to a column's own type costs nothing).
 */
const typedColumns = (specs: ColumnSpec[]) =>
  specs.map((spec) => `c.${quote(spec.name)}::${spec.type} as ${quote(spec.name)}`).join(', ')

/**
 * `c` (a child row in the table) holds exactly the values of `y` (the incoming one), every column and
 * `_raw`: their binary images are equal (`record_image_eq`, nulls equal to nulls). Unlike `=`, it tells
 * a numeric's scale apart (1.0, 1.00, also inside jsonb), so a kept row is the row a rewrite would give.
 */
function sameRow(specs: ColumnSpec[]): string {
  const row = (alias: string) =>
    `row(${columnList(specs.map((spec) => spec.name).concat('_raw'), `${alias}.`)})`
  return `record_image_eq(${row('c')}, ${row('y')})`
}

function softDeletedAt(resource: Resource, record: UpstreamRecord, now: Date): string | null {
  if (!resource.softDeleteKey) return null
  const mark = record[resource.softDeleteKey]
  if (mark === undefined || mark === null || mark === false) return null
  return (coerce('timestamptz', mark) as string | null) ?? now.toISOString()
}

function applyRule(resource: Resource, fetchedAt: string | null): RawBuilder<unknown> {
  // t: the row in the mirror; excluded: the incoming record; fetchedAt: when its request was sent.
  // On a tie, a payload never replaces a fetched row, and a fetch never replaces one whose request
  // was sent after its own (a sweep's page applied after a refresh that read a later state).
  const tieAccepts = sql`not (excluded._source = 'payload' and t._source = 'fetch')
    and not coalesce(excluded._source = 'fetch' and t._source = 'fetch' and excluded._fetched_at < t._fetched_at, false)`
  // A fetch whose request was sent well after a payload's row was written (a minute: room for an API
  // that shows a change a little after its webhook) read the upstream's state after that payload,
  // whatever the dates say: a payload dated in the future (forged, a clock error) cannot pin its row.
  const laterFetch = sql`(excluded._source = 'fetch' and t._source = 'payload'
    and excluded._fetched_at > t._synced_at + interval '1 minute')`
  const liveRowAccepts = hasUpdatedAt(resource)
    ? sql`(t.updated_at is null or excluded.updated_at > t.updated_at
          or (excluded.updated_at = t.updated_at and ${tieAccepts}) or ${laterFetch})`
    : tieAccepts
  return sql`(t._deleted_at is null and ${liveRowAccepts})
    or (t._deleted_at is not null and ${fetchedAt}::timestamptz > t._deleted_at)
    or (t._deleted_at is not null and excluded._deleted_at is not null and ${liveRowAccepts})`
}

/**
 * Upserts a batch of records of one resource with their children, in two statements.
 * `records` are unwrapped upstream records; the full record is kept in `_raw`.
 */
export async function upsertRecords(
  db: Db,
  resource: Resource,
  records: UpstreamRecord[],
  origin: RecordOrigin,
): Promise<UpsertResult> {
  if (records.length === 0) return { applied: [], ignored: [], inserted: [] }
  const now = new Date()
  const convert = coercer()
  // In id order: every writer locks rows in the same order, so two of them never deadlock.
  const newest = new Map([...newestPerId(resource, records, convert)].sort(([a], [b]) => a - b))
  // The records once, in the order of the column arrays: `rows from` zips them by position. A string
  // jsonb or text cannot hold (NUL, half a surrogate pair), or a value nested too deep to serialize,
  // would fail the whole batch: such records are written as `storable` makes them (U+FFFD there, null
  // below MAX_DEPTH levels; src/store/jsonb.ts), in `_raw`, columns and children alike.
  let raw = serialize([...newest.values()])
  if (raw === undefined || storableText(raw) === undefined) {
    // Only the records that need it, so that a record is written the same whatever came beside it.
    for (const [id, record] of newest) {
      const text = serialize(record)
      if (text === undefined || storableText(text) === undefined)
        newest.set(id, storable(record) as UpstreamRecord)
    }
    raw = JSON.stringify([...newest.values()])
  }
  const specs = columnSpecs(resource.columns)
  const names = specs.map((spec) => spec.name)
  // A tombstone is compared with the time the request for a fetched record was sent.
  const fetchedAt = origin.source === 'fetch' ? origin.fetchedAt.toISOString() : null
  const columns: string[][] = specs.map(() => [])
  const deletedAt: string[] = []
  for (const record of newest.values()) {
    pushColumns(specs, columns, record, convert)
    deletedAt.push(arrayElement('timestamptz', softDeletedAt(resource, record, now)))
  }

  // Statement 1 writes the parents and tells, for each row written, which child tables hold the
  // incoming record's children already (`same`, one flag per table of `includesByTable`): the row version
  // its snapshot shows carries every include of the table, byte for byte equal to the incoming ones,
  // and it is the very version the statement replaced: its `_version` (which every write increments)
  // is the one the update found, so no other writer came between the snapshot and the lock. Children
  // always mirror the `_raw` of the last parent write that carried their includes, so their rows are
  // then exactly those a replacement would leave: they are not touched. The flags are read by a
  // subquery per row, which runs once the row is written (a join could read the table first); every
  // doubt (no row in the snapshot, a row another writer replaced) reads as "changed".
  const tables = includesByTable(resource)
  // (The incoming record carries every include of a table whose children it replaces, so a row that
  // lacks one of them never compares equal: SQL null is not a JSON value.)
  const flags = tables.map(({ keys }) => {
    const values = (alias: string) =>
      sql.join(keys.map((key) => sql`${sql.raw(alias)}._raw -> ${sql.lit(key)}`))
    return sql`coalesce(record_image_eq(row(${values('o')}), row(${values('u')})), false)`
  })
  const same =
    tables.length > 0
      ? sql`(select array[${sql.join(flags)}] from ${sql.raw(table(resource.name))} o
          where o.id = u.id and o._version = u._version - 1)`
      : sql`null::boolean[]`

  // `_fetched_at` is the time of the request whose answer wrote the row; a payload keeps the row's.
  const updates = [...names.filter((name) => name !== 'id'), '_raw', '_synced_at', '_deleted_at', '_source']
    .map((name) => `${quote(name)} = excluded.${quote(name)}`)
    .concat('_fetched_at = coalesce(excluded._fetched_at, t._fetched_at)', '_version = t._version + 1')
    .join(', ')

  const parentsStatement = sql<{ id: number; inserted: boolean; same: boolean[] | null }>`
    with upserted as (
      insert into ${sql.raw(table(resource.name))} as t (${sql.raw(columnList(names))}, _raw, _synced_at, _deleted_at, _source, _fetched_at)
      select ${sql.raw(columnList(names, 'x.'))}, x._raw, now(), x._deleted_at, ${origin.source}, ${fetchedAt}::timestamptz
      from rows from (
        ${sql.join(unnests(specs, columns))},
        jsonb_array_elements(${raw}::jsonb), unnest(${arrayLiteral(deletedAt)}::timestamptz[])
      ) as x(${sql.raw(columnList(names))}, _raw, _deleted_at)
      on conflict (id) do update set ${sql.raw(updates)}
      where ${applyRule(resource, fetchedAt)}
      returning t.id, t.xmax = 0 as inserted, t._raw, t._version
    )
    select u.id, u.inserted, ${same} as same from upserted u
  `
  // Children are replaced by a second statement, after the first has locked the parents: its snapshot
  // then holds the children of any writer that committed those parents before, which it deletes. (In
  // one statement, the snapshot predates the lock, and two writers of one parent could both keep
  // their children.)
  let inserted: number[] = []
  const write = async (trx: Db) => {
    const { rows } = await parentsStatement.execute(trx)
    const applied = rows.map((row) => row.id)
    inserted = rows.filter((row) => row.inserted).map((row) => row.id)
    // Per child table, the parents written whose records carry its includes and whose children differ.
    const replace = new Map<ChildTable, number[]>()
    tables.forEach(({ child, keys }, index) => {
      const ids: number[] = []
      for (const row of rows) {
        if (row.same?.[index]) continue
        const record = newest.get(row.id) as UpstreamRecord
        if (keys.every((key) => key in record)) ids.push(row.id)
      }
      if (ids.length > 0)
        replace.set(
          child,
          ids.sort((a, b) => a - b),
        )
    })
    if (replace.size > 0) await replaceChildren(trx, resource, newest, replace, convert)
    return applied
  }
  const applied = db.isTransaction ? await write(db) : await db.transaction().execute(write)
  const written = new Set(applied)
  return { applied, ignored: [...newest.keys()].filter((id) => !written.has(id)), inserted }
}

/**
 * Statement 2: replaces the children of the parents in `replace` (per child table) with those their
 * records carry. Rows equal to an incoming one at its place are kept (see the file's header).
 */
async function replaceChildren(
  trx: Db,
  resource: Resource,
  records: Map<number, UpstreamRecord>,
  replace: Map<ChildTable, number[]>,
  convert: Coerce,
) {
  const parentIds = [...new Set([...replace.values()].flat())].sort((a, b) => a - b)
  const children = childBatches(resource, records, replace, convert)
    .filter((batch) => batch.parentIds.length > 0)
    .map((batch, index) => {
      const names = batch.specs.map((spec) => spec.name)
      const target = sql.raw(table(batch.child.table))
      const deleted = sql.raw(`deleted_${index}`)
      const inserted = sql.raw(`inserted_${index}`)
      // Only the parents that were written, and of those only the ones whose record carries the includes.
      const replaced =
        batch.parentIds.length === parentIds.length
          ? sql`select id from parents`
          : sql`select id from parents where id = any(${arrayLiteral(batch.parentIds)}::bigint[])`
      // `= any(array(...))`: an index scan on (_parent_resource, _parent_id) per parent.
      const deletion = sql`,
      ${deleted} as (
        delete from ${target} c
        where c._parent_resource = ${resource.name} and c._parent_id = any(array(${replaced}))
      )`
      if (batch.rowParents.length === 0) return deletion
      const incoming = sql.raw(`incoming_${index}`)
      const kept = sql.raw(`kept_${index}`)
      const existing = sql.raw(`existing_${index}`)
      return sql`,
      ${incoming} as (
        select y._parent_id, y._ordinal, ${sql.raw(columnList(names, 'y.'))}, u._raw -> y._key -> y._index as _raw
        from rows from (
          unnest(${arrayLiteral(batch.rowParents)}::bigint[]), unnest(${arrayLiteral(batch.ordinals)}::integer[]),
          ${sql.join(unnests(batch.specs, batch.columns))},
          unnest(${arrayLiteral(batch.keys)}::text[]), unnest(${arrayLiteral(batch.indexes)}::integer[])
        ) as y(_parent_id, _ordinal, ${sql.raw(columnList(names))}, _key, _index)
        join parents u on u.id = y._parent_id
      ),
      -- Every part reads the table as it was before the statement. The parents are locked by this
      -- transaction, so no other writer touches these rows meanwhile: their ctids stay theirs.
      ${existing} as materialized (
        select c.ctid as _ctid, c._parent_id, c._ordinal, ${sql.raw(typedColumns(batch.specs))}, c._raw
        from ${target} c
        where c._parent_resource = ${resource.name} and c._parent_id = any(array(${replaced}))
      ),
      ${kept} as (
        select distinct on (c._parent_id, c._ordinal) c._ctid, c._parent_id, c._ordinal
        from ${existing} c join ${incoming} y on y._parent_id = c._parent_id and y._ordinal = c._ordinal
        where ${sql.raw(sameRow(batch.specs))}
      ),
      ${deleted} as (
        delete from ${target} c
        where c.ctid = any(array(select _ctid from ${existing} where _ctid not in (select _ctid from ${kept})))
      ),
      ${inserted} as (
        insert into ${target} (_parent_resource, _parent_id, _ordinal, ${sql.raw(columnList(names))}, _raw)
        select ${resource.name}, y._parent_id, y._ordinal, ${sql.raw(columnList(names, 'y.'))}, y._raw
        from ${incoming} y
        where (y._parent_id, y._ordinal) not in (select _parent_id, _ordinal from ${kept})
      )`
    })

  await sql`
    with parents as (
      select id, _raw from ${sql.raw(table(resource.name))} where id = any(${arrayLiteral(parentIds)}::bigint[])
    )${sql.join(children, sql``)}
    select 1
  `.execute(trx)
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
    on conflict (id) do update set _deleted_at = excluded._deleted_at, _synced_at = now(), _version = t._version + 1,
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
