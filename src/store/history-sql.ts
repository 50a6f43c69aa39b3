// What the history of the mirror asks of the database, as SQL. Pure: ./history.ts reads the catalog,
// compares and applies what differs. For every main table of the resource table (crm.people):
// - history.crm_people: the mirror table's columns (as the catalog has them, so that a column a
//   migration adds is followed) and _valid_from, _valid_to (null while current), _deleted;
// - history.crm_people_write(): a trigger function, run by two statement-level triggers on the mirror
//   table (after insert, after update; their transition tables hold the rows written), that writes one
//   version per row whose data changed: a column that is not an engine column (those beginning with an
//   underscore), `_raw`, or whether the row is deleted. A rewrite of the same record (a full resync)
//   changes engine columns only and writes nothing. The current version of the row is closed at the new
//   version's _valid_from;
// - history.crm_people_as_of(timestamptz): the mirror table as it was at that time.
// _valid_from is the upstream's updated_at, or, for a tombstone, when the deletion was observed
// (_deleted_at); where the resource has no updated_at, when crm-sync wrote the row (_synced_at). A version
// never starts before the current one: a time before it is taken as the current version's start, which
// then covers no instant (its interval is empty), so that intervals never overlap nor run backwards.
// The triggers see every write: a migration that rewrites a main table's typed columns (a backfill from
// _raw) makes a version of each row it changes, dated as the row, which replaces the current version at
// once (that one then covers no instant).
import { mirrorTables } from '../resources/dictionary/index.ts'
import { hasUpdatedAt, resources } from '../resources/index.ts'
import { ident, literal } from './dictionary-sql.ts'

export const HISTORY_SCHEMA = 'history'

/** The names of the triggers on each main table. */
export const HISTORY_TRIGGERS = ['history_insert', 'history_update'] as const

/** A column of a main table as the catalog has it: name and `format_type`. */
export interface CatalogColumn {
  name: string
  type: string
}

/** The history table of a main table: `crm.people` → `crm_people`. */
export const historyTableName = (mirror: string): string => mirror.replace('.', '_')

/** The main tables, qualified, in the order of the resource table. */
export const historyMirrors: readonly string[] = resources.map((resource) => resource.name)

/** Engine columns begin with an underscore; `_raw` is the record itself. */
const isData = (column: string) => !column.startsWith('_') || column === '_raw'

const q = (schema: string, name: string) => `${ident(schema)}.${ident(name)}`

/** `crm.people` quoted: `"crm"."people"`. */
export const qualified = (name: string): string => name.split('.').map(ident).join('.')

export interface HistoryObjects {
  mirror: string
  /** Unqualified, in schema history. */
  table: string
  /** `"history"."crm_people"` */
  qualified: string
  /** The mirror's columns, in order: those of the history table before _valid_from. */
  columns: CatalogColumn[]
  createTable: string
  /** Index name (in schema history): its `create index`. */
  indexes: Map<string, string>
  /** Function name (in schema history): its body (as pg_proc.prosrc holds it) and its definition. */
  functions: Map<string, { body: string; create: string }>
  /** Trigger name: its definition. */
  triggers: Map<string, string>
  /** Fills a new history table from the mirror table: see seedStatement. */
  seed: string
  /** `comment on ...` key (as ./history.ts reads the catalog): the text. */
  comments: Map<string, { statement: string; text: string }>
}

const VALID_COLUMNS = (() => {
  const deleted = 'boolean generated always as ("_deleted_at" is not null) stored'
  return `"_valid_from" timestamptz not null, "_valid_to" timestamptz, "_deleted" ${deleted}`
})()

/** When the version in row `r` begins, before the guard against going back in time. */
function validFrom(mirror: string, r: string): string {
  const resource = resources.find((entry) => entry.name === mirror)
  const live =
    resource && hasUpdatedAt(resource)
      ? `coalesce(${r}."updated_at", ${r}."_synced_at")`
      : `${r}."_synced_at"`
  return `case when ${r}."_deleted_at" is not null then ${r}."_deleted_at" else ${live} end`
}

function writeBody(mirror: string, history: string, columns: CatalogColumn[]): string {
  const names = columns.map((column) => ident(column.name))
  const list = names.join(', ')
  const data = (alias: string) =>
    [
      ...columns.filter((c) => isData(c.name)).map((c) => `${alias}.${ident(c.name)}`),
      `${alias}."_deleted_at" is null`,
    ].join(', ')
  const versions = (changed: string) => `
    with changed as (${changed}),
    closed as (
      update ${history} h set "_valid_to" = greatest(c._from, h."_valid_from")
      from changed c where h."id" = c."id" and h."_valid_to" is null
      returning h."id", h."_valid_from"
    )
    insert into ${history} (${list}, "_valid_from")
    select ${names.map((name) => `c.${name}`).join(', ')}, greatest(c._from, p."_valid_from")
    from changed c left join closed p on p."id" = c."id";`
  return `
begin
  if tg_op = 'UPDATE' then${versions(`
      select n.*, ${validFrom(mirror, 'n')} as _from from new_rows n join old_rows o on o."id" = n."id"
      where (${data('o')}) is distinct from (${data('n')})`)}
  else${versions(`select n.*, ${validFrom(mirror, 'n')} as _from from new_rows n`)}
  end if;
  return null;
end
`
}

function asOfBody(history: string, columns: CatalogColumn[]): string {
  return `
  select ${columns.map((column) => ident(column.name)).join(', ')} from ${history}
  where "_valid_from" <= at_time and ("_valid_to" > at_time or "_valid_to" is null)
`
}

/**
 * One current version per row; a tombstone with its record (not a placeholder) and an updated_at before
 * its deletion also its last live state, closed at the deletion. Run once the triggers exist, in their
 * transaction: the rows written after it are versions of their own.
 */
function seedStatement(mirror: string, history: string, columns: CatalogColumn[]): string {
  const list = columns.map((column) => ident(column.name)).join(', ')
  const resource = resources.find((entry) => entry.name === mirror)
  const current = `select ${list}, ${validFrom(mirror, 'm')}, null::timestamptz from ${qualified(mirror)} m`
  if (!resource || !hasUpdatedAt(resource))
    return `insert into ${history} (${list}, "_valid_from", "_valid_to") ${current}`
  const live = columns.map((column) => (column.name === '_deleted_at' ? 'null' : `m.${ident(column.name)}`))
  return `insert into ${history} (${list}, "_valid_from", "_valid_to")
    select ${live.join(', ')}, m."updated_at", m."_deleted_at" from ${qualified(mirror)} m
    where m."_deleted_at" is not null and m."_raw" is not null and m."updated_at" < m."_deleted_at"
    union all ${current}`
}

const HISTORY_COLUMN_TEXTS: Readonly<Record<string, string>> = {
  _synced_at: 'When crm-sync wrote this version.',
  _deleted_at:
    'Null in a live version; in a tombstone, when the record was found deleted upstream (or its own ' +
    'deletion mark): its _valid_from, unless the version before began later.',
  _version: "The mirror row's _version when crm-sync wrote this version.",
  _valid_from:
    "When this version became valid: the upstream's updated_at of the record (a resource without one: " +
    'when crm-sync wrote it); a tombstone: when the deletion was observed. Never before the previous ' +
    "version's _valid_from: an earlier time is taken as that one, whose interval is then empty.",
  _valid_to: 'When the next version began (its _valid_from); null while this one is current.',
  _deleted: 'Whether this version is a tombstone (_deleted_at is not null).',
}

export const HISTORY_SCHEMA_TEXT =
  'History of the main tables of the mirror, kept by crm-sync: one table per main table ' +
  '(history.crm_people for crm.people) with every version crm-sync wrote, valid from _valid_from to ' +
  '_valid_to; history.<table>_as_of(t) gives the table as it was at t.'

function comments(mirror: string, name: string, columns: CatalogColumn[]) {
  const dictionary = mirrorTables.find((entry) => entry.name === mirror)
  const describe = (column: string) =>
    HISTORY_COLUMN_TEXTS[column] ?? dictionary?.columns.find((c) => c.name === column)?.description ?? ''
  const found = new Map<string, { statement: string; text: string }>()
  const add = (key: string, object: string, text: string) =>
    found.set(key, { statement: `comment on ${object} is ${literal(text)}`, text })
  add(
    `table.${name}`,
    `table ${q(HISTORY_SCHEMA, name)}`,
    `Every version of the records of ${mirror} crm-sync wrote (a write that changed a field, _raw or ` +
      `whether the record is deleted), valid from _valid_from to _valid_to. ${dictionary?.description ?? ''}`.trim(),
  )
  for (const column of [...columns.map((c) => c.name), '_valid_from', '_valid_to', '_deleted'])
    add(`column.${name}.${column}`, `column ${q(HISTORY_SCHEMA, name)}.${ident(column)}`, describe(column))
  add(
    `function.${name}_as_of`,
    `function ${q(HISTORY_SCHEMA, `${name}_as_of`)}(timestamptz)`,
    `${mirror} as it was at the given time: of each record the version valid then (_valid_from <= t < ` +
      `_valid_to), deleted ones with _deleted_at set; the columns of ${mirror}.`,
  )
  add(
    `function.${name}_write`,
    `function ${q(HISTORY_SCHEMA, `${name}_write`)}()`,
    `Trigger function of ${mirror}: writes a version of every row a statement changed in more than its engine columns.`,
  )
  return found
}

/** Everything of one main table's history, for its columns as the catalog has them. */
export function historyObjects(mirror: string, columns: CatalogColumn[]): HistoryObjects {
  const name = historyTableName(mirror)
  const history = q(HISTORY_SCHEMA, name)
  const write = `${name}_write`
  const asOf = `${name}_as_of`
  const writeText = writeBody(mirror, history, columns)
  const asOfText = asOfBody(history, columns)
  const definitions = columns.map(
    (column) => `${ident(column.name)} ${column.type}${column.name === 'id' ? ' not null' : ''}`,
  )
  const trigger = (event: 'insert' | 'update', transitions: string) =>
    `create trigger ${ident(`history_${event}`)} after ${event} on ${qualified(mirror)} ` +
    `referencing ${transitions} for each statement execute function ${q(HISTORY_SCHEMA, write)}()`
  return {
    mirror,
    table: name,
    qualified: history,
    columns,
    createTable: `create table ${history} (${definitions.join(', ')}, ${VALID_COLUMNS})`,
    indexes: new Map([
      // A record's versions; the current version of each record (closed by the next); closed versions by
      // their end (retention).
      [`${name}_id`, `create index if not exists ${ident(`${name}_id`)} on ${history} ("id", "_valid_from")`],
      [
        `${name}_current`,
        `create index if not exists ${ident(`${name}_current`)} on ${history} ("id") where "_valid_to" is null`,
      ],
      [
        `${name}_valid_to`,
        `create index if not exists ${ident(`${name}_valid_to`)} on ${history} ("_valid_to") where "_valid_to" is not null`,
      ],
    ]),
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
    seed: seedStatement(mirror, history, columns),
    comments: comments(mirror, name, columns),
  }
}
