// Keeps the history of the mirror (./history-sql.ts) after the migrations: schema history, a table of
// versions per main table, its index, the view of it, the trigger function and the two triggers on the
// main table, the point-in-time function and the comments. The catalog is read first and only what
// differs is written, so that a start on a current database costs one query. A versions table created
// here is filled in the same transaction, the main table locked against writes from the start until the
// commit: one current version per row (an install upgraded to history gets its first versions from the
// mirror as it is), or, from the layout before (history.crm_people a table whose versions were closed by
// an update of _valid_to), the versions it held, in their order.
//
// Unlike the comments and views, history is not left for later: a version missed is missed for good,
// so any failure here (a lock not had within 3 s included) fails the migration, and the start with it.
// Writes are one transaction under an advisory lock: replicas starting together take turns.
import { type Kysely, sql } from 'kysely'
import type { Logger } from '../log.ts'
import { catalogNames } from './account-schemas.ts'
import { ident, literal } from './dictionary-sql.ts'
import { historySize } from './history-size.ts'
import {
  type CatalogColumn,
  HISTORY_SCHEMA,
  HISTORY_SCHEMA_TEXT,
  HISTORY_TRIGGERS,
  type HistoryObjects,
  historyMirrors,
  historyObjects,
  qualified,
} from './history-sql.ts'

/** Transaction advisory lock key of the history's writes ("history"). */
const HISTORY_LOCK = 0x0c1d_0004
const LOCK_TIMEOUT_MS = 3_000

interface Catalog {
  schema: boolean
  /** `crm.people`, `history.crm_people` or `history.crm_people_versions`: its columns in order. */
  columns: Map<string, CatalogColumn[]>
  /** `history.crm_people`: its relkind (`r` a table, `v` a view). */
  kinds: Map<string, string>
  /** Names of the indexes in schema history. */
  indexes: Set<string>
  /** Function name in schema history: its body. */
  functions: Map<string, string>
  /** `crm.people history_insert`: `<tgenabled> <function>`. */
  triggers: Map<string, string>
  /** Key as history-sql.ts makes them (`table.crm_people`, `column.crm_people.id`, `function.crm_people_as_of`). */
  comments: Map<string, string>
}

/** The catalog of `db`'s account, with the code's names (./account-schemas.ts). */
async function readCatalog<DB>(db: Kysely<DB>): Promise<Catalog> {
  const names = catalogNames(db)
  const mirrors = historyMirrors.map(names.physical)
  const history = names.physical(HISTORY_SCHEMA)
  // The first select's types are the union's: text throughout (a `name` would cut keys at 63 bytes).
  const { rows } = await sql<{ kind: string; relation: string; name: string; detail: string | null }>`
    select 'column' as kind, n.nspname || '.' || c.relname as relation, a.attname::text as name,
      format_type(a.atttypid, a.atttypmod) as detail, a.attnum as position
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where (n.nspname || '.' || c.relname = any(${mirrors}::text[]) or n.nspname = ${history})
      and c.relkind in ('r', 'v') and a.attnum > 0 and not a.attisdropped
    union all
    select 'relation', n.nspname || '.' || c.relname, c.relname, c.relkind::text, 0
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${history} and c.relkind in ('r', 'v')
    union all
    select 'index', '', c.relname, null, 0 from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${history} and c.relkind = 'i'
    union all
    select 'function', '', p.proname, p.prosrc, 0 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = ${history}
    union all
    select 'trigger', n.nspname || '.' || c.relname, t.tgname, t.tgenabled::text || ' ' || t.tgfoid::regproc::text, 0
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname || '.' || c.relname = any(${mirrors}::text[]) and t.tgname = any(${[...HISTORY_TRIGGERS]}::text[])
    union all
    select 'schema', '', n.nspname, obj_description(n.oid, 'pg_namespace'), 0 from pg_namespace n
    where n.nspname = ${history}
    union all
    select 'comment', '', 'table.' || c.relname, obj_description(c.oid, 'pg_class'), 0
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${history} and c.relkind in ('r', 'v')
    union all
    select 'comment', '', 'column.' || c.relname || '.' || a.attname, col_description(c.oid, a.attnum), a.attnum
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${history} and c.relkind in ('r', 'v') and a.attnum > 0 and not a.attisdropped
    union all
    select 'comment', '', 'function.' || p.proname, obj_description(p.oid, 'pg_proc'), 0
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${history}
    order by 1, 2, 5`.execute(db)
  const catalog: Catalog = {
    schema: false,
    columns: new Map(),
    kinds: new Map(),
    indexes: new Set(),
    functions: new Map(),
    triggers: new Map(),
    comments: new Map(),
  }
  for (const { relation, detail, ...rest } of rows) {
    const row = { ...rest, relation: names.logical(relation), detail: detail && names.logicalText(detail) }
    if (row.kind === 'schema') {
      catalog.schema = true
      if (row.detail !== null) catalog.comments.set('schema', row.detail)
    } else if (row.kind === 'column') {
      const columns = catalog.columns.get(row.relation) ?? []
      catalog.columns.set(row.relation, [...columns, { name: row.name, type: row.detail ?? '' }])
    } else if (row.kind === 'relation') catalog.kinds.set(row.relation, row.detail ?? '')
    else if (row.kind === 'index') catalog.indexes.add(row.name)
    else if (row.kind === 'function') catalog.functions.set(row.name, row.detail ?? '')
    else if (row.kind === 'trigger') catalog.triggers.set(`${row.relation} ${row.name}`, row.detail ?? '')
    else if (row.kind === 'comment' && row.detail !== null) catalog.comments.set(row.name, row.detail)
  }
  return catalog
}

/** What to run, in this order: tables (with their index; filled), columns, indexes, views, functions, triggers. */
interface Plan {
  schema: boolean
  /** Versions tables to create: filled from the mirror (`seed`) or from the layout before (`upgrade`). */
  tables: { objects: HistoryObjects; fill: string[] }[]
  columns: string[]
  indexes: string[]
  views: string[]
  functions: string[]
  triggers: string[]
  /** Main tables whose triggers are missing, disabled or call another function: writes make no version. */
  untracked: string[]
  comments: string[]
}

function plan(catalog: Catalog): Plan {
  const work: Plan = {
    schema: !catalog.schema,
    tables: [],
    columns: [],
    indexes: [],
    views: [],
    functions: [],
    triggers: [],
    untracked: [],
    comments: [],
  }
  for (const mirror of historyMirrors) {
    const columns = catalog.columns.get(mirror)
    if (!columns) throw new Error(`history: the main table ${mirror} does not exist`)
    const objects = historyObjects(mirror, columns)
    const view = `${HISTORY_SCHEMA}.${objects.view}`
    const existing = catalog.columns.get(`${HISTORY_SCHEMA}.${objects.table}`)
    if (!existing) {
      const old = catalog.kinds.get(view) === 'r' ? catalog.columns.get(view) : undefined
      const kept = columns.filter((column) => old?.some((o) => o.name === column.name))
      const fill = old ? objects.upgrade(kept.map((column) => column.name)) : [objects.seed]
      work.tables.push({ objects, fill })
    } else {
      for (const column of columns.filter((c) => !existing.some((e) => e.name === c.name)))
        work.columns.push(`alter table ${objects.qualified} add column ${ident(column.name)} ${column.type}`)
      for (const [name, create] of objects.indexes) if (!catalog.indexes.has(name)) work.indexes.push(create)
    }
    // The view's columns keep their places; one the main table gained comes last.
    const shown = catalog.kinds.get(view) === 'v' ? (catalog.columns.get(view) ?? []).map((c) => c.name) : []
    const order = [...shown, ...objects.viewColumns.filter((name) => !shown.includes(name))]
    if (order.length !== shown.length) work.views.push(objects.createView(order))
    for (const [name, { body, create }] of objects.functions)
      if (catalog.functions.get(name) !== body) work.functions.push(create)
    const table = qualified(mirror)
    const before = work.triggers.length
    for (const [name, create] of objects.triggers) {
      const found = catalog.triggers.get(`${mirror} ${name}`)
      if (found === undefined) work.triggers.push(create)
      else if (found.slice(2) !== `${HISTORY_SCHEMA}.${objects.view}_write`)
        work.triggers.push(`drop trigger ${ident(name)} on ${table}`, create)
      // Disabled by hand (ALTER TABLE ... DISABLE TRIGGER): history would miss writes.
      else if (found.startsWith('D')) work.triggers.push(`alter table ${table} enable trigger ${ident(name)}`)
    }
    if (work.triggers.length > before) work.untracked.push(mirror)
    for (const [key, { statement, text }] of objects.comments)
      if (catalog.comments.get(key) !== text) work.comments.push(statement)
  }
  if (catalog.comments.get('schema') !== HISTORY_SCHEMA_TEXT)
    work.comments.push(`comment on schema ${ident(HISTORY_SCHEMA)} is ${literal(HISTORY_SCHEMA_TEXT)}`)
  return work
}

const statementsOf = (work: Plan) =>
  [work.columns, work.indexes, work.views, work.functions, work.triggers].reduce(
    (sum, list) => sum + list.length,
    0,
  )

const isEmpty = (work: Plan) =>
  !work.schema && work.tables.length + statementsOf(work) + work.comments.length === 0

export interface HistoryChanges {
  /** Versions tables created (and filled). */
  created: string[]
  /** Versions they were filled with. */
  seeded: number
  /** Other statements run: columns, indexes, views, functions, triggers. */
  statements: number
}

export interface HistoryStatus {
  state: 'current' | 'pending'
  /** One line, as `crm-sync check` shows it. */
  detail: string
}

/** Whether history is as the next start or migrate would leave it, without changing anything. */
export async function inspectHistory<DB>(db: Kysely<DB>): Promise<HistoryStatus> {
  const work = plan(await readCatalog(db))
  const views = historyMirrors.length
  if (isEmpty(work)) {
    const { versions, bytes } = await historySize(db)
    const size = `about ${Math.round(versions).toLocaleString('en')} versions in ${Math.ceil(bytes / 2 ** 20)} MiB`
    return { state: 'current', detail: `${views} tables' history kept, ${size}` }
  }
  const parts = [
    work.untracked.length > 0 ? `writes of ${work.untracked.join(', ')} make no version (triggers)` : '',
    work.tables.length > 0 ? `${work.tables.length} versions tables to create` : '',
    work.columns.length + work.indexes.length + work.views.length + work.functions.length > 0
      ? 'columns, indexes, views or functions to change'
      : '',
    work.schema || work.comments.length > 0 ? 'comments to write' : '',
  ].filter(Boolean)
  return {
    state: 'pending',
    detail: `history out of date: ${parts.join('; ')}; the next start or migrate brings it in line`,
  }
}

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code

/** Brings the history schema in line with the main tables; throws when it cannot (see the head). */
export async function maintainHistory<DB>(db: Kysely<DB>, logger?: Logger): Promise<HistoryChanges> {
  const none: HistoryChanges = { created: [], seeded: 0, statements: 0 }
  if (isEmpty(plan(await readCatalog(db)))) return none
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${HISTORY_LOCK})`.execute(trx)
      await sql`select set_config('lock_timeout', ${String(LOCK_TIMEOUT_MS)}, true)`.execute(trx)
      // Another replica may have done it meanwhile.
      const work = plan(await readCatalog(trx))
      if (isEmpty(work)) return none
      const run = async (statement: string) => void (await sql.raw(statement).execute(trx))
      // No one writes a main table whose versions are being filled: the writes would be versions of their
      // own, or written into the table of the layout before once it was copied.
      for (const { objects } of work.tables)
        await run(`lock table ${qualified(objects.mirror)} in share row exclusive mode`)
      if (work.schema) await run(`create schema if not exists ${ident(HISTORY_SCHEMA)}`)
      for (const { objects } of work.tables) {
        await run(objects.createTable)
        for (const create of objects.indexes.values()) await run(create)
      }
      let seeded = 0
      for (const { fill } of work.tables)
        for (const statement of fill) {
          const result = await sql.raw(statement).execute(trx)
          if (statement.startsWith('insert')) seeded += Number(result.numAffectedRows ?? 0)
        }
      for (const statement of [
        ...work.columns,
        ...work.indexes,
        ...work.views,
        ...work.functions,
        ...work.triggers,
      ])
        await run(statement)
      if (work.comments.length > 0) await run(work.comments.join(';\n'))
      const created = work.tables.map(({ objects }) => `${HISTORY_SCHEMA}.${objects.table}`)
      const statements = statementsOf(work)
      if (created.length > 0 || statements > 0)
        logger?.info(
          { created, seeded, statements },
          'history tables, functions and triggers created or updated',
        )
      return { created, seeded, statements }
    })
  } catch (error) {
    if (codeOf(error) !== '55P03') throw error
    throw new Error(
      `history not kept: a lock on a main table was held for over ${LOCK_TIMEOUT_MS / 1000} s (start again once that session is done)`,
      { cause: error },
    )
  }
}
