// What the history of the mirror asks of the database, as SQL. Pure: ./history.ts reads the catalog,
// compares and applies what differs. For every main table of the resource table (crm.people):
// - history.crm_people_versions: the versions, written once and never updated: the mirror table's
//   columns (as the catalog has them, so that a column a migration adds is followed), _valid_from and
//   _seq (the order in which they were written);
// - history.crm_people: a view of the versions with _valid_to (the next version's _valid_from; null
//   while current) and _deleted. A version's end is derived rather than written: closing the version
//   before would rewrite that whole row, which cost as much again as writing the new one;
// - history.crm_people_write(): a trigger function, run by two statement-level triggers on the mirror
//   table (after insert, after update; their transition tables hold the rows written), that writes one
//   version per row whose data changed: a column that is not an engine column (those beginning with an
//   underscore), `_raw`, or whether the row is deleted. A rewrite of the same record (a full resync)
//   changes engine columns only and writes nothing;
// - history.crm_people_as_of(timestamptz): the mirror table as it was at that time.
// _valid_from is the upstream's updated_at, or, for a tombstone, when the deletion was observed
// (_deleted_at); where the resource has no updated_at, when crm-sync wrote the row (_synced_at). A version
// never starts before the current one: a time before it is taken as the current version's start, which
// then covers no instant (its interval is empty), so that intervals never overlap nor run backwards, and
// _valid_from grows with _seq within a record.
// The triggers see every write: a migration that rewrites a main table's typed columns (a backfill from
// _raw) makes a version of each row it changes, dated as the row, which replaces the current version at
// once (that one then covers no instant).

import { HISTORY_SCHEMA, HISTORY_VIEW_COLUMNS } from '../resources/dictionary/history.ts'
import { hasUpdatedAt, resources } from '../resources/index.ts'
import { ident } from './dictionary-sql.ts'
import { historyComments } from './history-comments.ts'

export { HISTORY_SCHEMA, HISTORY_SCHEMA_TEXT } from '../resources/dictionary/history.ts'

/** The names of the triggers on each main table. */
export const HISTORY_TRIGGERS = ['history_insert', 'history_update'] as const

/** A column of a main table as the catalog has it: name and `format_type`. */
export interface CatalogColumn {
  name: string
  type: string
}

/** The view of a main table's history: `crm.people` → `crm_people`. */
export const historyTableName = (mirror: string): string => mirror.replace('.', '_')

/** The table of its versions: `crm.people` → `crm_people_versions`. */
export const versionsTableName = (mirror: string): string => `${historyTableName(mirror)}_versions`

/** The main tables, qualified, in the order of the resource table. */
export const historyMirrors: readonly string[] = resources.map((resource) => resource.name)

/** Engine columns begin with an underscore; `_raw` is the record itself. */
const isData = (column: string) => !column.startsWith('_') || column === '_raw'

const q = (schema: string, name: string) => `${ident(schema)}.${ident(name)}`

/** `crm.people` quoted: `"crm"."people"`. */
export const qualified = (name: string): string => name.split('.').map(ident).join('.')

export interface HistoryObjects {
  mirror: string
  /** The view, unqualified, in schema history: `crm_people`. */
  view: string
  /** The versions table, unqualified: `crm_people_versions`. */
  table: string
  /** `"history"."crm_people_versions"` */
  qualified: string
  /** The mirror's columns, in order: those of a version before _valid_from. */
  columns: CatalogColumn[]
  createTable: string
  /** Index name (in schema history): its `create index`. */
  indexes: Map<string, string>
  /** The view's columns, in the order of a new view. */
  viewColumns: string[]
  /**
   * Its definition with its columns in this order (of viewColumns): `create or replace`, which keeps
   * what users built on it, as long as the columns it had keep their places (a new column comes last).
   */
  createView: (order: string[]) => string
  /** Function name (in schema history): its body (as pg_proc.prosrc holds it) and its definition. */
  functions: Map<string, { body: string; create: string }>
  /** Trigger name: its definition. */
  triggers: Map<string, string>
  /** Fills a new versions table from the mirror table: see seedStatement. */
  seed: string
  /**
   * Fills a new versions table from the history table of the layout before (history.crm_people, a
   * table with _valid_to) with these of its columns, then drops that table.
   */
  upgrade: (columns: string[]) => string[]
  /** `comment on ...` key (as ./history.ts reads the catalog): the text. */
  comments: Map<string, { statement: string; text: string }>
}

/** When the version in row `r` begins, before the guard against going back in time. */
function validFrom(mirror: string, r: string): string {
  const resource = resources.find((entry) => entry.name === mirror)
  const live =
    resource && hasUpdatedAt(resource)
      ? `coalesce(${r}."updated_at", ${r}."_synced_at")`
      : `${r}."_synced_at"`
  return `case when ${r}."_deleted_at" is not null then ${r}."_deleted_at" else ${live} end`
}

function writeBody(mirror: string, versions: string, columns: CatalogColumn[]): string {
  const names = columns.map((column) => ident(column.name))
  const data = (alias: string) =>
    [
      ...columns.filter((c) => isData(c.name)).map((c) => `${alias}.${ident(c.name)}`),
      `${alias}."_deleted_at" is null`,
    ].join(', ')
  // The record's latest version, found by the index on (id, _seq): the new one begins no earlier.
  const insert = (changed: string) => `
    insert into ${versions} (${names.join(', ')}, "_valid_from")
    select ${names.map((name) => `c.${name}`).join(', ')}, greatest(c._from, (
      select h."_valid_from" from ${versions} h where h."id" = c."id" order by h."_seq" desc limit 1))
    from (${changed}) c;`
  return `
begin
  if tg_op = 'UPDATE' then${insert(`
      select n.*, ${validFrom(mirror, 'n')} as _from from new_rows n join old_rows o on o."id" = n."id"
      where (${data('o')}) is distinct from (${data('n')})`)}
  else${insert(`select n.*, ${validFrom(mirror, 'n')} as _from from new_rows n`)}
  end if;
  return null;
end
`
}

/**
 * Of each record of the main table the last version begun by then: _valid_from grows with _seq, so it is
 * the one valid at that time. One backward probe of the index per record, rather than a sort of every
 * version; the id is the main table's, so that a condition on it finds the one record by its key.
 */
function asOfBody(mirror: string, versions: string, columns: CatalogColumn[]): string {
  const list = columns.map((column) => (column.name === 'id' ? 'm."id"' : `x.${ident(column.name)}`))
  return `
  select ${list.join(', ')} from ${qualified(mirror)} m cross join lateral (
    select v.* from ${versions} v where v."id" = m."id" and v."_valid_from" <= at_time
    order by v."_seq" desc limit 1) x
`
}

/**
 * One current version per row; a tombstone with its record (not a placeholder) and an updated_at before
 * its deletion also its last live state before it. Run once the triggers exist, in their transaction
 * (the main table locked): the rows written after it are versions of their own.
 */
function seedStatement(mirror: string, versions: string, columns: CatalogColumn[]): string {
  const list = columns.map((column) => ident(column.name)).join(', ')
  const resource = resources.find((entry) => entry.name === mirror)
  const current = `select ${list}, ${validFrom(mirror, 'm')} as "_valid_from", 1 as _ord from ${qualified(mirror)} m`
  const live = columns.map((column) => (column.name === '_deleted_at' ? 'null' : `m.${ident(column.name)}`))
  const before =
    resource && hasUpdatedAt(resource)
      ? ` union all select ${live.join(', ')}, m."updated_at", 0 from ${qualified(mirror)} m
    where m."_deleted_at" is not null and m."_raw" is not null and m."updated_at" < m."_deleted_at"`
      : ''
  return `insert into ${versions} (${list}, "_valid_from")
    select ${list}, "_valid_from" from (${current}${before}) s order by "id", _ord`
}

function upgradeStatements(versions: string, old: string, columns: string[]): string[] {
  const list = columns.map(ident).join(', ')
  return [
    `insert into ${versions} (${list}, "_valid_from")
    select ${list}, "_valid_from" from ${old} order by "id", "_valid_from", "_valid_to" nulls last`,
    `drop table ${old}`,
  ]
}

/** A column of the view: the versions table's, or one it derives. */
function viewColumn(name: string): string {
  if (name === '_valid_to')
    return `lead("_valid_from") over (partition by "id" order by "_seq") as "_valid_to"`
  if (name === '_deleted') return `"_deleted_at" is not null as "_deleted"`
  return ident(name)
}

/** Everything of one main table's history, for its columns as the catalog has them. */
export function historyObjects(mirror: string, columns: CatalogColumn[]): HistoryObjects {
  const view = historyTableName(mirror)
  const table = versionsTableName(mirror)
  const versions = q(HISTORY_SCHEMA, table)
  const write = `${view}_write`
  const asOf = `${view}_as_of`
  const writeText = writeBody(mirror, versions, columns)
  const asOfText = asOfBody(mirror, versions, columns)
  const definitions = columns.map(
    (column) => `${ident(column.name)} ${column.type}${column.name === 'id' ? ' not null' : ''}`,
  )
  const trigger = (event: 'insert' | 'update', transitions: string) =>
    `create trigger ${ident(`history_${event}`)} after ${event} on ${qualified(mirror)} ` +
    `referencing ${transitions} for each statement execute function ${q(HISTORY_SCHEMA, write)}()`
  const columnNames = columns.map((column) => column.name)
  const viewColumns = [...columnNames, ...HISTORY_VIEW_COLUMNS.map((column) => column.name)]
  return {
    mirror,
    view,
    table,
    qualified: versions,
    columns,
    createTable:
      `create table ${versions} (${definitions.join(', ')}, "_valid_from" timestamptz not null, ` +
      `"_seq" bigint generated always as identity)`,
    // A record's versions in the order written: its latest (the trigger, which reads its _valid_from
    // from the index alone once vacuum has seen the version), the next of each (the view), the last
    // begun by a time (as_of), the replaced ones (retention).
    indexes: new Map([
      [
        `${table}_id`,
        `create index if not exists ${ident(`${table}_id`)} on ${versions} ("id", "_seq") include ("_valid_from")`,
      ],
    ]),
    viewColumns,
    createView: (order) =>
      `create or replace view ${q(HISTORY_SCHEMA, view)} as select ${order.map(viewColumn).join(', ')} ` +
      `from ${versions}`,
    functions: new Map([
      [
        write,
        {
          body: writeText,
          create: `create or replace function ${q(HISTORY_SCHEMA, write)}() returns trigger language plpgsql as $history$${writeText}$history$`,
        },
      ],
      [
        asOf,
        {
          body: asOfText,
          create:
            `create or replace function ${q(HISTORY_SCHEMA, asOf)}(at_time timestamptz) returns setof ${qualified(mirror)} ` +
            `language sql stable as $history$${asOfText}$history$`,
        },
      ],
    ]),
    triggers: new Map([
      ['history_insert', trigger('insert', 'new table as new_rows')],
      ['history_update', trigger('update', 'old table as old_rows new table as new_rows')],
    ]),
    seed: seedStatement(mirror, versions, columns),
    upgrade: (kept) => upgradeStatements(versions, q(HISTORY_SCHEMA, view), kept),
    comments: historyComments(mirror, { schema: HISTORY_SCHEMA, view, table }, columnNames),
  }
}
