// What the details pass (src/sync/details/) reads and writes: the records whose details (lists read per
// record, such as a person's historic events) are due, their rows, and sync.record_details, which says
// when each record's were last read (migrations/0025_person_details.ts).
// A record's details are due when they were never read, when its `updated_at` has moved since they were
// (a webhook, the feed or a sweep wrote a change), or when they were read before the last full run of
// the resource began (the safety net for changes the upstream makes without a word). A record whose
// last read failed waits until its `retry_at`.
import { type RawBuilder, sql } from 'kysely'
import type { ChildMapping, Resource } from '../resources/index.ts'
import type { Db } from './database.ts'
import { serialize, storable, storableText } from './jsonb.ts'
import { coercer, columnList, columnSpecs, pushColumns, table, unnests } from './records/arrays.ts'
import type { UpstreamRecord } from './records/types.ts'

/** A record whose details are due: its id and its `updated_at` in the mirror as it was picked. */
export interface DueRecord {
  id: number
  /** As PostgreSQL prints it, so that it is written back to the microsecond. */
  updatedAt: string | null
  /** Why: never read, changed since the last read, or read before the last full run began. */
  reason: 'new' | 'changed' | 'stale'
}

/**
 * The join and the three reasons, shared by the pick and the counts. "The last full run" is the start
 * of the latest sweep of a full run that succeeded (not any walk that read every page: an incremental
 * one does when a count differs, and would make every record due).
 */
function dueParts(resource: Resource): { from: RawBuilder<unknown>; reason: RawBuilder<unknown> } {
  const from = sql`${sql.raw(table(resource.name))} p
    left join sync.record_details d on d.resource = ${resource.name} and d.record_id = p.id
    cross join (
      select max(s.started_at) as started_at
      from sync.run_resources s join sync.runs r on r.id = s.run_id
      where s.resource = ${resource.name} and s.status = 'succeeded' and r.mode = 'full'
    ) f`
  const reason = sql`case
    when d.read_at is null then 'new'
    when d.read_for is distinct from p.updated_at then 'changed'
    when d.read_at < f.started_at then 'stale'
  end`
  return { from, reason }
}

/**
 * Up to `limit` live records whose details are due and not waiting after a failure: those changed since
 * their last read first, the newest change first (the freshness of what users just changed), then those
 * never read, then those read before the last full run, the longest ago first.
 */
export async function pickDueDetails(db: Db, resource: Resource, limit: number): Promise<DueRecord[]> {
  const { from, reason } = dueParts(resource)
  const result = await sql<{ id: number; updated_at: string | null; reason: DueRecord['reason'] }>`
    select id, updated_at::text as updated_at, reason from (
      select p.id, p.updated_at, d.read_at, ${reason} as reason from ${from}
      where p._deleted_at is null and (d.retry_at is null or d.retry_at <= now())
    ) due
    where reason is not null
    order by case reason when 'changed' then 0 when 'new' then 1 else 2 end,
      case when reason = 'stale' then read_at end nulls first, updated_at desc nulls last, id
    limit ${limit}
  `.execute(db)
  return result.rows.map((row) => ({ id: Number(row.id), updatedAt: row.updated_at, reason: row.reason }))
}

export interface DetailsProgress {
  resource: string
  /** Live records of the resource. */
  records: number
  /** Of those, the ones whose details are read and not due. */
  current: number
  /** Due because never read. */
  new: number
  /** Due because the record changed since its details were read. */
  changed: number
  /** Due because read before the last full run of the resource began. */
  stale: number
  /** Of the due ones, those whose last read failed, waiting to be tried again. */
  failing: number
  /** When the last read was made; null before the first. */
  lastReadAt: Date | null
}

/** How far the details pass has come with a resource's live records. */
export async function readDetailsProgress(db: Db, resource: Resource): Promise<DetailsProgress> {
  const { from, reason } = dueParts(resource)
  const result = await sql<{
    records: number
    new: number
    changed: number
    stale: number
    failing: number
    last_read_at: Date | null
  }>`
    select count(*)::int as records,
      count(*) filter (where reason = 'new')::int as new,
      count(*) filter (where reason = 'changed')::int as changed,
      count(*) filter (where reason = 'stale')::int as stale,
      count(*) filter (where reason is not null and retry_at > now())::int as failing,
      (select max(read_at) from sync.record_details where resource = ${resource.name}) as last_read_at
    from (select ${reason} as reason, d.retry_at from ${from} where p._deleted_at is null) due
  `.execute(db)
  const row = result.rows[0]
  const records = row?.records ?? 0
  const due = { new: row?.new ?? 0, changed: row?.changed ?? 0, stale: row?.stale ?? 0 }
  return {
    resource: resource.name,
    records,
    current: records - due.new - due.changed - due.stale,
    ...due,
    failing: row?.failing ?? 0,
    lastReadAt: row?.last_read_at ?? null,
  }
}

/** One list read for a record: the mapping it feeds and its items in order, unwrapped. */
export interface DetailList {
  mapping: ChildMapping
  items: unknown[]
}

/** Items as jsonb can hold them (no `\u0000`, no numbers beyond its range, not nested too deep). */
function storableItems(items: unknown[]): unknown[] {
  const text = serialize(items)
  return text !== undefined && storableText(text) !== undefined ? items : (storable(items) as unknown[])
}

/**
 * Replaces a record's rows of one list's table with the items read, unless they are equal already
 * (then nothing is written, so change data capture sees no churn).
 */
async function replaceList(trx: Db, resource: Resource, id: number, list: DetailList): Promise<void> {
  const { child } = list.mapping
  const target = sql.raw(table(child.table))
  const items = storableItems(list.items)
  const json = JSON.stringify(items)
  const held = await sql<{ same: boolean }>`
    select coalesce(jsonb_agg(_raw order by _ordinal), '[]'::jsonb) = ${json}::jsonb as same
    from ${target} where _parent_resource = ${resource.name} and _parent_id = ${id}
  `.execute(trx)
  if (held.rows[0]?.same) return
  await sql`delete from ${target} where _parent_resource = ${resource.name} and _parent_id = ${id}`.execute(
    trx,
  )
  if (items.length === 0) return
  const specs = columnSpecs(child.columns)
  const columns: string[][] = specs.map(() => [])
  const convert = coercer()
  for (const item of items) {
    const source = typeof item === 'object' && item !== null && !Array.isArray(item) ? item : {}
    pushColumns(specs, columns, source as UpstreamRecord, convert, list.mapping.defaults)
  }
  const names = specs.map((spec) => spec.name)
  await sql`
    insert into ${target} (_parent_resource, _parent_id, _ordinal, ${sql.raw(columnList(names))}, _raw)
    select ${resource.name}, ${id}::bigint, (e.idx - 1)::int, ${sql.raw(columnList(names, 'y.'))}, e.item
    from jsonb_array_elements(${json}::jsonb) with ordinality e(item, idx)
    join rows from (${sql.join(unnests(specs, columns))}) with ordinality as y(${sql.raw(columnList(names))}, idx)
      using (idx)
  `.execute(trx)
}

/**
 * Writes what one read of a record's details found (the lists it could read; a list the upstream
 * answered 404 for keeps its rows), with when it was read (`readAt`: the grant of its first request)
 * and the record's `updated_at` as picked (`readFor`). A read older than the one held (another
 * replica's, after a lease changed hands) writes nothing: false.
 */
export async function writeDetails(
  db: Db,
  resource: Resource,
  id: number,
  read: { lists: DetailList[]; readAt: Date; readFor: string | Date | null },
): Promise<boolean> {
  const readFor = read.readFor instanceof Date ? read.readFor.toISOString() : read.readFor
  return await db.transaction().execute(async (trx) => {
    const state = await sql<{ read_at: Date }>`
      insert into sync.record_details as d (resource, record_id, read_at, read_for)
      values (${resource.name}, ${id}, ${read.readAt.toISOString()}::timestamptz, ${readFor}::timestamptz)
      on conflict (resource, record_id) do update
        set read_at = excluded.read_at, read_for = excluded.read_for, failures = 0, retry_at = null
        where d.read_at is null or d.read_at <= excluded.read_at
      returning d.read_at
    `.execute(trx)
    if (state.rows.length === 0) return false
    for (const list of read.lists) await replaceList(trx, resource, id, list)
    return true
  })
}

/** The longest a record waits after reads that failed in a row: 30 s, doubled each time, up to this. */
const MAX_RETRY_SECONDS = 3600

/**
 * Records a read of a record's details that failed: it is not picked again for 30 s, doubled with each
 * failure in a row, at most an hour; what was read before stays.
 */
export async function markDetailsFailed(db: Db, resource: Resource, id: number): Promise<void> {
  await sql`
    insert into sync.record_details as d (resource, record_id, failures, retry_at)
    values (${resource.name}, ${id}, 1, now() + interval '30 seconds')
    on conflict (resource, record_id) do update
      set failures = d.failures + 1,
        retry_at = now() + least(${MAX_RETRY_SECONDS}, 30 * power(2, least(d.failures, 16))) * interval '1 second'
  `.execute(db)
}

/** The mappings of a resource whose lists are read per record: its details (the pass's routes). */
export function detailMappings(resource: Resource): ChildMapping[] {
  return resource.children.filter((mapping) => mapping.route !== undefined)
}
