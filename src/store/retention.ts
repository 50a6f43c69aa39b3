// Pruning what the engine no longer needs: deliveries done with (sync.inbox), finished runs
// (sync.runs, with their sweeps in sync.run_resources) and, when asked, closed versions of records
// (schema history). The receiver inserts into the inbox all the
// time, so each batch is one short statement in a transaction of its own that waits for no row: rows
// another transaction holds are passed over (`skip locked`) and left to the next pass. A table lock (a
// migration's) is waited for briefly: a delete queued behind it would hold up the inserts queued behind
// the delete.
import { type Kysely, sql } from 'kysely'
import { idType, resourceNames, resources } from '../resources/index.ts'
import { accountLockKey } from './account-schemas.ts'
import type { Db } from './database.ts'
import {
  HISTORY_SCHEMA,
  historyMirrors,
  historyTableName,
  qualified,
  versionsTableName,
} from './history-sql.ts'
import type { Database, InboxStatus } from './schema.ts'

/** Rows deleted by one batch, per table and status. */
export interface PrunedRows {
  table: 'sync.inbox' | 'sync.runs' | 'sync.run_resources' | `history.${string}`
  status: string
  rows: number
}

/** Statuses of deliveries done with; an `accepted` one is still to be applied and never pruned. */
export type SettledInboxStatus = Exclude<InboxStatus, 'accepted'>

// Arbitrary constant of this project: the key of the advisory lock that lets one replica prune at a time.
const RETENTION_LOCK = 7_349_201_116

// A batch waits at most this long for a table lock (a migration's, say) and runs at most this long.
const LOCK_TIMEOUT = '2s'
const STATEMENT_TIMEOUT = '30s'

/**
 * Runs `work` on one connection of the pool while holding the retention lock (a session lock: a
 * process that dies lets go of it with its connection). Null, without running it, when another
 * process holds the lock.
 */
export async function withRetentionLock<T>(db: Db, work: (db: Db) => Promise<T>): Promise<T | null> {
  // Each account's retention has a lock of its own: one account's never keeps another's from its turn.
  const key = accountLockKey(db, RETENTION_LOCK)
  return db.connection().execute(async (connection) => {
    const result = await sql<{ locked: boolean }>`
      select pg_try_advisory_lock(${key}) as locked
    `.execute(connection)
    if (!result.rows[0]?.locked) return null
    try {
      return await work(connection)
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(connection)
    }
  })
}

async function inShortTransaction<T>(db: Db, work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`
      select set_config('lock_timeout', ${LOCK_TIMEOUT}, true),
        set_config('statement_timeout', ${STATEMENT_TIMEOUT}, true)
    `.execute(trx)
    return work(trx)
  })
}

const latest = (dates: (Date | null)[]): Date | null =>
  dates.reduce<Date | null>((last, date) => (last && (!date || last > date) ? last : date), null)

/** One batch: the rows it deleted, and where the next batch of the pass starts. */
export interface PruneBatch<Cursor extends PruneCursor = Date | null> {
  pruned: PrunedRows[]
  /** Rows of the batch's own table deleted (a batch short of its limit was the last). */
  deleted: number
  /**
   * Where the batch stopped (the time of the last row it deleted; of history, the last version it read);
   * null when it deleted (read) nothing.
   */
  after: Cursor
  /** Whether another batch may find more; without it, whether the batch deleted its limit. */
  more?: boolean
}

/** Where a batch starts: a time, or (history) the last version read, `[id, _seq]` as JSON. */
export type PruneCursor = Date | string | null

/**
 * Deletes up to `limit` deliveries of these statuses done with more than `olderThanDays` ago: applied
 * (`processed_at`), or received (rejected and failed ones), oldest first from `after` (a received_at).
 * Accepted deliveries are never deleted.
 */
export async function pruneInboxBatch(
  db: Db,
  options: {
    statuses: readonly SettledInboxStatus[]
    olderThanDays: number
    limit: number
    after?: Date | null
  },
): Promise<PruneBatch> {
  const { statuses, olderThanDays, limit, after } = options
  // The index on received_at walks the expired rows oldest first, and stops at the cutoff; starting
  // where the batch before stopped, a pass reads each expired row once however many there are, rather
  // than the dead rows of every batch before it again (vacuum has not removed them yet).
  const result = await inShortTransaction(db, (trx) =>
    sql<{ status: string; rows: number; last: Date }>`
      with doomed as (
        select id from sync.inbox
        where status = any(${[...statuses]}::text[]) and status <> 'accepted'
          and received_at >= ${after ?? '-infinity'}::timestamptz
          and received_at < now() - make_interval(days => ${olderThanDays})
          -- never before received_at
          and coalesce(processed_at, received_at) < now() - make_interval(days => ${olderThanDays})
        order by received_at
        limit ${limit}
        for update skip locked
      ), gone as (
        delete from sync.inbox where id in (select id from doomed) returning status, received_at
      )
      select status, count(*)::int as rows, max(received_at) as last from gone group by status order by status
    `.execute(trx),
  )
  return {
    pruned: result.rows.map((row) => ({ table: 'sync.inbox', status: row.status, rows: row.rows })),
    deleted: result.rows.reduce((sum, row) => sum + row.rows, 0),
    after: latest(result.rows.map((row) => row.last)),
  }
}

/**
 * Deletes up to `limit` runs that finished more than `olderThanDays` ago, with their sweeps, oldest
 * first from `after` (a created_at). Kept whatever their age: runs with a sweep still queued or running,
 * and a run holding the latest finished sweep of its resource (what `status` shows as its last run).
 */
export async function pruneRunsBatch(
  db: Db,
  options: { olderThanDays: number; limit: number; after?: Date | null },
): Promise<PruneBatch> {
  const { olderThanDays, limit, after } = options
  const result = await inShortTransaction(db, (trx) =>
    sql<{ table: 'sync.runs' | 'sync.run_resources'; status: string; rows: number; last: Date | null }>`
      -- Each resource's latest finished sweep, as status finds it: a short backward scan of the
      -- primary key per resource.
      with kept as (
        select s.run_id from unnest(${[...resourceNames]}::text[]) as r(name)
        cross join lateral (
          select rr.run_id from sync.run_resources rr
          where rr.resource = r.name and rr.status in ('succeeded', 'failed')
          order by rr.run_id desc
          limit 1
        ) s
      ), doomed as (
        select r.id from sync.runs r
        where r.status in ('succeeded', 'failed')
          and r.created_at >= ${after ?? '-infinity'}::timestamptz
          and r.created_at < now() - make_interval(days => ${olderThanDays})
          -- never before created_at
          and coalesce(r.finished_at, r.created_at) < now() - make_interval(days => ${olderThanDays})
          and r.id not in (select run_id from kept)
          and not exists (
            select from sync.run_resources s
            where s.run_id = r.id and s.status not in ('succeeded', 'failed')
          )
        order by r.created_at
        limit ${limit}
        for update of r skip locked
      ), sweeps as (
        delete from sync.run_resources where run_id in (select id from doomed) returning status
      ), runs as (
        delete from sync.runs where id in (select id from doomed) returning status, created_at
      )
      select 'sync.runs' as "table", status, count(*)::int as rows, max(created_at) as last
      from runs group by status
      union all
      select 'sync.run_resources', status, count(*)::int, null from sweeps group by status
      order by 1, 2
    `.execute(trx),
  )
  const runs = result.rows.filter((row) => row.table === 'sync.runs')
  return {
    pruned: result.rows.map((row) => ({ table: row.table, status: row.status, rows: row.rows })),
    deleted: runs.reduce((sum, row) => sum + row.rows, 0),
    after: latest(runs.map((row) => row.last)),
  }
}

/** The history tables (`history.crm_people`), one per main table. */
export const historyTables: readonly string[] = historyMirrors.map(
  (mirror) => `${HISTORY_SCHEMA}.${historyTableName(mirror)}`,
)

/**
 * Deletes the versions of a history table (`history.crm_people`, of its versions table) that were
 * replaced more than `olderThanDays` ago (their `_valid_to`, the next version's `_valid_from`) among the
 * next `limit` it holds after `after`, in the order of its index (id, _seq): a pass reads each version
 * once. Current versions are never deleted, and neither is a version whose next one is kept: as_of
 * answers for every time since the oldest version kept, as it did before.
 */
export async function pruneHistoryBatch(
  db: Db,
  options: { table: string; olderThanDays: number; limit: number; after?: PruneCursor },
): Promise<PruneBatch<string | null>> {
  const { table, olderThanDays, limit, after } = options
  const mirror = historyMirrors.find((name) => `${HISTORY_SCHEMA}.${historyTableName(name)}` === table)
  const resource = resources.find((entry) => entry.name === mirror)
  if (!mirror || !resource) throw new Error(`no history table ${table}`)
  const versions = sql.raw(qualified(`${HISTORY_SCHEMA}.${versionsTableName(mirror)}`))
  const [id, seq] = typeof after === 'string' ? (JSON.parse(after) as [string, string]) : [null, null]
  const start =
    id === null ? sql`true` : sql`(v.id, v._seq) > (${id}::${sql.raw(idType(resource))}, ${seq}::bigint)`
  const cutoff = sql`now() - make_interval(days => ${olderThanDays})`
  const result = await inShortTransaction(db, (trx) =>
    sql<{ rows: number; read: number; id: string | null; seq: string | null }>`
      with scanned as (
        select v.ctid, v.id, v._seq, v._valid_from from ${versions} v where ${start}
        order by v.id, v._seq limit ${limit}
      ), gone as (
        delete from ${versions} where ctid = any(array(
          select s.ctid from scanned s where s._valid_from < ${cutoff} and exists (
            select 1 from ${versions} n where n.id = s.id and n._seq > s._seq and n._valid_from < ${cutoff})))
        returning 1
      ), last as (select id::text, _seq::text as seq from scanned order by id desc, _seq desc limit 1)
      select (select count(*)::int from gone) as rows, (select count(*)::int from scanned) as read,
        (select id from last) as id, (select seq from last) as seq
    `.execute(trx),
  )
  const row = result.rows[0]
  const rows = row?.rows ?? 0
  return {
    pruned: rows > 0 ? [{ table: table as `history.${string}`, status: 'replaced', rows }] : [],
    deleted: rows,
    after: row?.id == null ? null : JSON.stringify([row.id, row.seq]),
    more: (row?.read ?? 0) === limit,
  }
}
