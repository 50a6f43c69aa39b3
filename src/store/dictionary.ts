// Applies the data dictionary (src/resources/dictionary) after the migrations: a comment on every
// schema, table, view and column of the mirror, and the live views (schemas crm_live and
// reservations_live). The catalog is read first and only what differs is written, so a second run is one
// query. Writes happen in one transaction under an advisory lock (replicas starting together take
// turns; the later ones find nothing to do). A view whose definition changed is replaced; one that can
// no longer be (a column removed or renamed) is dropped and created again. The comment of a live schema
// carries a hash of its views' definitions: the views are replaced when crm-sync's definitions change.
//
// Comments and views are a convenience for reports: when a lock cannot be had in time (a report holds
// a view that is to be replaced), a view cannot be dropped (someone's own view depends on it) or is
// another role's, nothing is written, the start goes on with a warning, and the next start (or
// `crm-sync migrate`) tries again.
import { type Kysely, sql } from 'kysely'
import type { Logger } from '../log.ts'
import { catalogNames } from './account-schemas.ts'
import {
  commentStatement,
  ident,
  liveSchemas,
  liveSchemaText,
  targetKey,
  type ViewDefinition,
  viewDefinitions,
  type WantedComment,
  wantedComments,
} from './dictionary-sql.ts'

/** Transaction advisory lock key of the dictionary's writes ("dictionary"). */
const DICTIONARY_LOCK = 0x0c1d_0002
const LOCK_TIMEOUT_MS = 3_000
// SQLSTATEs: lock_not_available; invalid_table_definition and datatype_mismatch (what `create or
// replace view` raises for a column removed, renamed or retyped); dependent_objects_still_exist,
// insufficient_privilege (a view created by another role).
const LOCK_NOT_AVAILABLE = '55P03'
const CANNOT_REPLACE = new Set(['42P16', '42804'])
const LEFT_FOR_LATER = new Set([LOCK_NOT_AVAILABLE, '2BP01', '42501'])

interface Catalog {
  schemas: Set<string>
  /** `schema.relation`: the relation's column names in order (views and tables alike). */
  columns: Map<string, string[]>
  /** targetKey: the comment there (objects without one are absent). */
  comments: Map<string, string>
}

/** The catalog of `db`'s account, with the code's names (./account-schemas.ts). */
async function readCatalog<DB>(db: Kysely<DB>): Promise<Catalog> {
  const names = catalogNames(db)
  const schemas = [...new Set([...liveSchemas.flatMap((live) => [live.schema, live.of])])].map(names.physical)
  const { rows } = await sql<{
    kind: string
    schema: string
    relation: string
    column: string
    comment: string | null
  }>`
    select 'schema' as kind, n.nspname as schema, '' as relation, '' as column, 0 as position,
      obj_description(n.oid, 'pg_namespace') as comment
    from pg_namespace n where n.nspname = any(${schemas})
    union all
    select case when c.relkind = 'v' then 'view' else 'table' end, n.nspname, c.relname, '', 0,
      obj_description(c.oid, 'pg_class')
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${schemas}) and c.relkind in ('r', 'p', 'v')
    union all
    select 'column', n.nspname, c.relname, a.attname, a.attnum, col_description(c.oid, a.attnum)
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = any(${schemas}) and c.relkind in ('r', 'p', 'v') and a.attnum > 0 and not a.attisdropped
    order by 2, 3, 5`.execute(db)
  const catalog: Catalog = { schemas: new Set(), columns: new Map(), comments: new Map() }
  for (const { schema: physical, comment, ...row } of rows) {
    const schema = names.logical(physical)
    if (row.kind === 'schema') catalog.schemas.add(schema)
    if (row.kind === 'column') {
      const relation = `${schema}.${row.relation}`
      catalog.columns.set(relation, [...(catalog.columns.get(relation) ?? []), row.column])
    }
    const key = targetKey({
      kind: row.kind as WantedComment['target']['kind'],
      schema,
      ...(row.relation ? { relation: row.relation } : {}),
      ...(row.column ? { column: row.column } : {}),
    })
    if (comment !== null) catalog.comments.set(key, names.logicalText(comment))
  }
  return catalog
}

interface Plan {
  schemas: string[]
  views: ViewDefinition[]
  comments: WantedComment[]
}

function plan(catalog: Catalog): Plan {
  const schemas = liveSchemas.filter((live) => !catalog.schemas.has(live.schema)).map((live) => live.schema)
  const stale = new Set(
    liveSchemas
      .filter(
        (live) =>
          catalog.comments.get(targetKey({ kind: 'schema', schema: live.schema })) !==
          liveSchemaText(live.of),
      )
      .map((live) => live.schema),
  )
  const views = viewDefinitions.filter(
    (view) =>
      stale.has(view.schema) ||
      catalog.columns.get(`${view.schema}.${view.name}`)?.join(',') !== view.columns.join(','),
  )
  const replaced = new Set(views.map((view) => `${view.schema}.${view.name}`))
  const wanted: WantedComment[] = [
    ...wantedComments,
    ...liveSchemas.map((live) => ({
      target: { kind: 'schema' as const, schema: live.schema },
      text: liveSchemaText(live.of),
    })),
  ]
  const comments = wanted.filter(
    ({ target, text }) =>
      replaced.has(`${target.schema}.${target.relation}`) || catalog.comments.get(targetKey(target)) !== text,
  )
  return { schemas, views, comments }
}

const isEmpty = (work: Plan) => work.schemas.length + work.views.length + work.comments.length === 0

const codeOf = (error: unknown) => (error as { code?: unknown }).code

/** `create or replace view`; if the view cannot be replaced, dropped and created again. */
async function createView<DB>(trx: Kysely<DB>, view: ViewDefinition): Promise<void> {
  await sql`savepoint dictionary_view`.execute(trx)
  try {
    await sql.raw(view.create).execute(trx)
  } catch (error) {
    if (!CANNOT_REPLACE.has(codeOf(error) as string)) throw error
    await sql`rollback to savepoint dictionary_view`.execute(trx)
    await sql.raw(`drop view ${ident(view.schema)}.${ident(view.name)}`).execute(trx)
    await sql.raw(view.create.replace('create or replace view', 'create view')).execute(trx)
  }
  await sql`release savepoint dictionary_view`.execute(trx)
}

export interface DictionaryChanges {
  views: number
  comments: number
}

/** Brings comments and live views in line with the data dictionary; returns how many it wrote. */
export async function applyDictionary<DB>(db: Kysely<DB>, logger?: Logger): Promise<DictionaryChanges> {
  if (isEmpty(plan(await readCatalog(db)))) return { views: 0, comments: 0 }
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${DICTIONARY_LOCK})`.execute(trx)
      await sql`select set_config('lock_timeout', ${String(LOCK_TIMEOUT_MS)}, true)`.execute(trx)
      // Another replica may have done it meanwhile.
      const work = plan(await readCatalog(trx))
      for (const schema of work.schemas)
        await sql.raw(`create schema if not exists ${ident(schema)}`).execute(trx)
      for (const view of work.views) await createView(trx, view)
      // Every comment in one round trip (a query without parameters may hold several statements).
      if (work.comments.length > 0)
        await sql.raw(work.comments.map(commentStatement).join(';\n')).execute(trx)
      if (work.views.length > 0) logger?.info({ views: work.views.length }, 'live views created or replaced')
      return { views: work.views.length, comments: work.comments.length }
    })
  } catch (error) {
    const code = codeOf(error)
    if (!LEFT_FOR_LATER.has(code as string)) throw error
    const why =
      code === LOCK_NOT_AVAILABLE
        ? `a lock was held for over ${LOCK_TIMEOUT_MS / 1000} s (by a report on a view, perhaps)`
        : `${(error as Error).message} (${(error as { detail?: string }).detail ?? 'see the error'})`
    logger?.warn(
      { err: error },
      `live views and comments not updated, the next start or crm-sync migrate tries again: ${why}`,
    )
    return { views: 0, comments: 0 }
  }
}
