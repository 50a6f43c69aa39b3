// Statement 1 of a batch: the parent rows, under the rule of which-wins.ts; then the
// children of the parents written whose includes changed (children.ts).
import { type RawBuilder, sql } from 'kysely'
import { type ChildTable, compareIds, type RecordId, type Resource } from '../../resources/index.ts'
import type { Db } from '../database.ts'
import { serialize, storable, storableText } from '../jsonb.ts'
import {
  arrayElement,
  arrayLiteral,
  type Coerce,
  coercer,
  columnList,
  columnSpecs,
  pushColumns,
  quote,
  table,
  unnests,
} from './arrays.ts'
import { includesByTable, replaceChildren } from './children.ts'
import { newestPerId, softDeletedAt } from './identity.ts'
import type { RecordOrigin, UpsertResult, UpstreamRecord } from './types.ts'
import { replacesRow } from './which-wins.ts'

/** A batch ready to write: one record per id, in id order, as column arrays and one JSON array. */
interface Batch {
  newest: Map<RecordId, UpstreamRecord>
  convert: Coerce
  names: string[]
  columns: RawBuilder<unknown>[]
  /** The records' JSON, in the order of the column arrays: `rows from` zips them by position. */
  raw: string
  deletedAt: string[]
}

function prepareBatch(resource: Resource, records: UpstreamRecord[]): Batch {
  const now = new Date()
  const convert = coercer()
  // In id order: every writer locks rows in the same order, so two of them never deadlock.
  const newest = new Map([...newestPerId(resource, records, convert)].sort(([a], [b]) => compareIds(a, b)))
  const raw = storableJson(newest)
  const specs = columnSpecs(resource.columns)
  const columns: string[][] = specs.map(() => [])
  const deletedAt: string[] = []
  for (const record of newest.values()) {
    pushColumns(specs, columns, record, convert)
    deletedAt.push(arrayElement('timestamptz', softDeletedAt(resource, record, now)))
  }
  return {
    newest,
    convert,
    names: specs.map((spec) => spec.name),
    columns: unnests(specs, columns),
    raw,
    deletedAt,
  }
}

/**
 * The records as one JSON array. A string jsonb or text cannot hold (NUL, half a surrogate pair), or a
 * value nested too deep to serialize, would fail the whole batch: such records are written as
 * `storable` makes them (U+FFFD there, null below MAX_DEPTH levels; ../jsonb.ts), in `_raw`, columns
 * and children alike; only the records that need it, so that a record is written the same whatever
 * came beside it.
 */
function storableJson(newest: Map<RecordId, UpstreamRecord>): string {
  const raw = serialize([...newest.values()])
  if (raw !== undefined && storableText(raw) !== undefined) return raw
  for (const [id, record] of newest) {
    const text = serialize(record)
    if (text === undefined || storableText(text) === undefined)
      newest.set(id, storable(record) as UpstreamRecord)
  }
  return JSON.stringify([...newest.values()])
}

/**
 * For each row written, which child tables hold the incoming record's children already (one flag per
 * table of `includesByTable`): the row version its snapshot shows carries every include of the table,
 * byte for byte equal to the incoming ones, and it is the very version the statement replaced: its
 * `_version` (which every write increments) is the one the update found, so no other writer came
 * between the snapshot and the lock. Children always mirror the `_raw` of the last parent write that
 * carried their includes, so their rows are then exactly those a replacement would leave: they are not
 * touched. The flags are read by a subquery per row, which runs once the row is written (a join could
 * read the table first); every doubt (no row in the snapshot, a row another writer replaced) reads as
 * "changed". (The incoming record carries every include of a table whose children it replaces, so a
 * row that lacks one of them never compares equal: SQL null is not a JSON value.)
 */
function sameChildren(resource: Resource, tables: { keys: string[] }[]): RawBuilder<unknown> {
  if (tables.length === 0) return sql`null::boolean[]`
  const flags = tables.map(({ keys }) => {
    const values = (alias: string) =>
      sql.join(keys.map((key) => sql`${sql.raw(alias)}._raw -> ${sql.lit(key)}`))
    return sql`coalesce(record_image_eq(row(${values('o')}), row(${values('u')})), false)`
  })
  return sql`(select array[${sql.join(flags)}] from ${sql.raw(table(resource.name))} o
    where o.id = u.id and o._version = u._version - 1)`
}

/** Statement 1: the parent rows, each written only when the ordering rules accept it. */
function parentsStatement(resource: Resource, batch: Batch, origin: RecordOrigin, same: RawBuilder<unknown>) {
  // A tombstone is compared with the time the request for a fetched record was sent.
  const fetchedAt = origin.source === 'fetch' ? origin.fetchedAt.toISOString() : null
  const { names } = batch
  // `_fetched_at` is the time of the request whose answer wrote the row; a payload keeps the row's.
  const updates = [...names.filter((name) => name !== 'id'), '_raw', '_synced_at', '_deleted_at', '_source']
    .map((name) => `${quote(name)} = excluded.${quote(name)}`)
    .concat('_fetched_at = coalesce(excluded._fetched_at, t._fetched_at)', '_version = t._version + 1')
    .join(', ')
  return sql<{ id: RecordId; inserted: boolean; same: boolean[] | null }>`
    with upserted as (
      insert into ${sql.raw(table(resource.name))} as t (${sql.raw(columnList(names))}, _raw, _synced_at, _deleted_at, _source, _fetched_at)
      select ${sql.raw(columnList(names, 'x.'))}, x._raw, now(), x._deleted_at, ${origin.source}, ${fetchedAt}::timestamptz
      from rows from (
        ${sql.join(batch.columns)},
        jsonb_array_elements(${batch.raw}::jsonb), unnest(${arrayLiteral(batch.deletedAt)}::timestamptz[])
      ) as x(${sql.raw(columnList(names))}, _raw, _deleted_at)
      on conflict (id) do update set ${sql.raw(updates)}
      where ${replacesRow(resource, fetchedAt)}
      returning t.id, t.xmax = 0 as inserted, t._raw, t._version
    )
    select u.id, u.inserted, ${same} as same from upserted u
  `
}

/** Per child table, the parents written whose records carry its includes and whose children differ. */
function childrenToReplace(
  tables: { child: ChildTable; keys: string[] }[],
  rows: { id: RecordId; same: boolean[] | null }[],
  newest: Map<RecordId, UpstreamRecord>,
): Map<ChildTable, RecordId[]> {
  const replace = new Map<ChildTable, RecordId[]>()
  tables.forEach(({ child, keys }, index) => {
    const ids = rows
      .filter(
        (row) => !row.same?.[index] && keys.every((key) => key in (newest.get(row.id) as UpstreamRecord)),
      )
      .map((row) => row.id)
    if (ids.length > 0) replace.set(child, ids.sort(compareIds))
  })
  return replace
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
  const batch = prepareBatch(resource, records)
  const tables = includesByTable(resource)
  const parents = parentsStatement(resource, batch, origin, sameChildren(resource, tables))
  // Children are replaced by a second statement, after the first has locked the parents: its snapshot
  // then holds the children of any writer that committed those parents before, which it deletes. (In
  // one statement, the snapshot predates the lock, and two writers of one parent could both keep
  // their children.)
  const write = async (trx: Db) => {
    const { rows } = await parents.execute(trx)
    const replace = childrenToReplace(tables, rows, batch.newest)
    if (replace.size > 0) await replaceChildren(trx, resource, batch.newest, replace, batch.convert)
    return rows
  }
  const rows = db.isTransaction ? await write(db) : await db.transaction().execute(write)
  const written = new Set(rows.map((row) => row.id))
  return {
    applied: rows.map((row) => row.id),
    ignored: [...batch.newest.keys()].filter((id) => !written.has(id)),
    inserted: rows.filter((row) => row.inserted).map((row) => row.id),
  }
}
