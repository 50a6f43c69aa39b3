// The child rows of the parents a batch wrote: built from their records' includes, then replaced in
// one statement that keeps the rows equal to an incoming one at its place (see ../records.ts).
import { sql } from 'kysely'
import {
  type ChildMapping,
  type ChildTable,
  compareIds,
  idType,
  type RecordId,
  type Resource,
} from '../../resources/index.ts'
import type { Db } from '../database.ts'
import {
  arrayLiteral,
  type Coerce,
  type ColumnSpec,
  columnList,
  columnSpecs,
  pushColumns,
  quote,
  quoteElement,
  table,
  unnests,
} from './arrays.ts'
import type { UpstreamRecord } from './types.ts'

interface ChildBatch {
  child: ChildTable
  mappings: ChildMapping[]
  specs: ColumnSpec[]
  /** Parents whose records carry every include that feeds the table: their children are replaced. */
  parentIds: RecordId[]
  // One entry per child row:
  rowParents: RecordId[]
  ordinals: number[]
  /** Where the item sits in its parent's record: `_raw -> key -> index`. */
  /** (quoted, as array elements) */
  keys: string[]
  indexes: number[]
  /** One array of elements per column of the child table. */
  columns: string[][]
}

/** The mappings whose items come inside the record (not those read per record, `route`). */
const includedChildren = (resource: Resource) => resource.children.filter((mapping) => !mapping.route)

/** The child tables of a resource, each with the mappings (include keys) that feed it, in a fixed order. */
export function includesByTable(resource: Resource): { child: ChildTable; keys: string[] }[] {
  const tables = new Map<ChildTable, string[]>()
  for (const mapping of includedChildren(resource))
    tables.set(mapping.child, [...(tables.get(mapping.child) ?? []), mapping.key])
  return [...tables].map(([child, keys]) => ({ child, keys }))
}

/** The upstream key of the column that bare ids go into (see `ChildMapping.idColumn`). */
function idKeyOf(specs: ColumnSpec[], column: string): string {
  const spec = specs.find((candidate) => candidate.name === column)
  if (!spec) throw new Error(`child mapping names idColumn ${column}, which its child table does not have`)
  return spec.key
}

/**
 * The rows of every child table for the parents in `replace` (per child table, the ids whose
 * children are replaced; the records carry every include that feeds the table).
 */
function childBatches(
  resource: Resource,
  records: Map<RecordId, UpstreamRecord>,
  replace: Map<ChildTable, RecordId[]>,
  convert: Coerce,
): ChildBatch[] {
  const batches = new Map<ChildTable, ChildBatch>()
  for (const mapping of includedChildren(resource)) {
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
        // Bare ids (a note's `person_ids`) become items holding the id under its column's key.
        const idKey = mapping.idColumn === undefined ? undefined : idKeyOf(batch.specs, mapping.idColumn)
        for (let index = 0; index < items.length; index++) {
          const item: unknown = items[index]
          let source: UpstreamRecord
          if (idKey === undefined) {
            const isObject = typeof item === 'object' && item !== null
            if (!isObject && !mapping.anyShape) continue
            source = isObject ? (item as UpstreamRecord) : {}
          } else {
            if (typeof item !== 'number' && typeof item !== 'string') continue
            source = { [idKey]: item }
          }
          pushColumns(batch.specs, batch.columns, source, convert, mapping.defaults)
          if (parentArray)
            parentArray[parentArray.length - 1] =
              typeof parentId === 'string' ? quoteElement(parentId) : String(parentId)
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

/**
 * Statement 2: replaces the children of the parents in `replace` (per child table) with those their
 * records carry. Rows equal to an incoming one at its place are kept (see the file's header).
 */
export async function replaceChildren(
  trx: Db,
  resource: Resource,
  records: Map<RecordId, UpstreamRecord>,
  replace: Map<ChildTable, RecordId[]>,
  convert: Coerce,
) {
  const parentIds = [...new Set([...replace.values()].flat())].sort(compareIds)
  // The parents' ids as array elements of the type of the parent's `id`. (Child tables hold
  // `_parent_id bigint`: the resources with text ids, attachments, have no children.)
  const ids = idType(resource)
  const idArray = (values: RecordId[]) =>
    arrayLiteral(values.map((id) => (typeof id === 'string' ? quoteElement(id) : id)))
  const idCast = sql.raw(`::${ids}[]`)
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
          : sql`select id from parents where id = any(${idArray(batch.parentIds)}${idCast})`
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
          unnest(${idArray(batch.rowParents)}${idCast}), unnest(${arrayLiteral(batch.ordinals)}::integer[]),
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
        returning 1
      ),
      -- The insert reads the deletion's count first, so the rows it replaces are gone before it puts
      -- new ones at their places (the key is (_parent_resource, _parent_id, _ordinal)); unread, the
      -- deletion could run after it.
      ${inserted} as (
        insert into ${target} (_parent_resource, _parent_id, _ordinal, ${sql.raw(columnList(names))}, _raw)
        select ${resource.name}, y._parent_id, y._ordinal, ${sql.raw(columnList(names, 'y.'))}, y._raw
        from ${incoming} y
        where (y._parent_id, y._ordinal) not in (select _parent_id, _ordinal from ${kept})
          and (select count(*) from ${deleted}) >= 0
      )`
    })

  await sql`
    with parents as (
      select id, _raw from ${sql.raw(table(resource.name))} where id = any(${idArray(parentIds)}${idCast})
    )${sql.join(children, sql``)}
    select 1
  `.execute(trx)
}
