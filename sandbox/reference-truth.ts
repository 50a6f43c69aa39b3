// References between records against the sandbox's truth: what a record names by id, which
// mirror-truth.ts leaves out (it compares text columns and named children): a task's attachable, a
// deal's or project's company and people, the companies of a person's positions. A destroy or a merge
// (merges.ts) changes these without touching the records that hold them, so the mirror may lag here
// until those records are read again: mirror-truth.ts compares them only when asked to
// (`references: true`). Only records live on both sides are compared (the rest is mirror-truth's);
// a difference reads as a sub-object's does: `crm.deals 42: people "1,2" != "1,3"`.
import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../src/store/database.ts'
import type { Plural } from './rows.ts'
import type { Sandbox } from './sandbox.ts'
import type { Difference, TableTruth } from './table-truth.ts'

type UpstreamRecord = Record<string, unknown>
/** A value the mirror holds for a record (`id`); a record may have several, or none. */
type ValueRow = { id: string; value: string | null }

interface Reference {
  /** The resource whose records hold the reference, and its sandbox collection. */
  table: string
  collection: Plural
  /** The name a difference gives it. */
  what: string
  /** The mirror's values, one row per value: (record id, value), for live records. */
  mirror: RawBuilder<ValueRow>
  /** The record's values upstream (the record as `show` with every include answers it). */
  upstream(record: UpstreamRecord): unknown[]
}

const text = (value: unknown) => (value === null || value === undefined ? '' : String(value))
const ids = (items: unknown, key: string) =>
  Array.isArray(items) ? items.map((item) => (item as UpstreamRecord | null)?.[key]) : []

/** The people of a deal or project, as rows of its child table. */
const peopleOf = (table: 'crm.deals' | 'crm.projects', children: 'crm.deal_people' | 'crm.project_people') =>
  sql<ValueRow>`
    select r.id::text as id, c.person_id::text as value from ${sql.table(table)} r
    join ${sql.table(children)} c on c._parent_resource = ${table} and c._parent_id = r.id
    where r._deleted_at is null`

const companyOf = (table: 'crm.deals' | 'crm.projects') =>
  sql<ValueRow>`
    select id::text as id, company_id::text as value from ${sql.table(table)} where _deleted_at is null`

const REFERENCES: readonly Reference[] = [
  {
    table: 'crm.tasks',
    collection: 'tasks',
    what: 'attachable',
    mirror: sql<ValueRow>`select id::text as id, coalesce(attachable_type, '') || ' ' || coalesce(attachable_id::text, '') as value
      from crm.tasks where _deleted_at is null`,
    upstream: (record) => [`${text(record.attachable_type)} ${text(record.attachable_id)}`],
  },
  {
    table: 'crm.deals',
    collection: 'deals',
    what: 'company_id',
    mirror: companyOf('crm.deals'),
    upstream: (record) => [record.company_id],
  },
  {
    table: 'crm.deals',
    collection: 'deals',
    what: 'people',
    mirror: peopleOf('crm.deals', 'crm.deal_people'),
    upstream: (record) => ids(record.people, 'id'),
  },
  {
    table: 'crm.projects',
    collection: 'projects',
    what: 'company_id',
    mirror: companyOf('crm.projects'),
    upstream: (record) => [record.company_id],
  },
  {
    table: 'crm.projects',
    collection: 'projects',
    what: 'people',
    mirror: peopleOf('crm.projects', 'crm.project_people'),
    upstream: (record) => ids(record.people, 'id'),
  },
  {
    table: 'crm.people',
    collection: 'people',
    what: 'position_companies',
    mirror: sql<ValueRow>`select p.id::text as id, c.company_id::text as value from crm.people p
      join crm.positions c on c._parent_resource = 'crm.people' and c._parent_id = p.id
      where p._deleted_at is null`,
    upstream: (record) => ids(record.positions, 'company_id'),
  },
]

/** Values as one label: as text, sorted. */
const label = (values: readonly unknown[]) =>
  values
    .map(text)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .join(',')

/** Every reference of the sandbox's CRM against the mirror, one TableTruth per table. */
export async function compareReferences(
  db: Db,
  sandbox: Pick<Sandbox, 'control'>,
  limit = 10,
): Promise<TableTruth[]> {
  const { crm } = sandbox.control
  const tables = new Map<string, TableTruth & { wrong: Set<number> }>()
  for (const reference of REFERENCES) {
    const { rows } = await reference.mirror.execute(db)
    const held = new Map<number, unknown[]>()
    for (const row of rows) held.set(Number(row.id), [...(held.get(Number(row.id)) ?? []), row.value])
    const { rows: live } = await sql<{ id: string }>`
      select id::text as id from ${sql.table(reference.table)} where _deleted_at is null`.execute(db)
    const mirrored = new Set(live.map((row) => Number(row.id)))
    const liveIds = crm.liveIds(reference.collection)
    const truth = tables.get(reference.table) ?? {
      table: reference.table,
      upstream: liveIds.length,
      inSync: 0,
      stale: 0,
      differences: [] as Difference[],
      wrong: new Set<number>(),
    }
    tables.set(reference.table, truth)
    for (const id of liveIds) {
      const record = crm.get(reference.collection, id)
      if (!record || !mirrored.has(id)) continue
      const expected = label(reference.upstream(record))
      const found = label(held.get(id) ?? [])
      if (found === expected) continue
      truth.wrong.add(id)
      if (truth.differences.length < limit)
        truth.differences.push({
          table: reference.table,
          id,
          what: `${reference.what} "${found}" != "${expected}"`,
        })
    }
  }
  return [...tables.values()].map(({ wrong, ...truth }) => ({
    ...truth,
    inSync: truth.upstream - wrong.size,
  }))
}
