// Retention: expired deliveries and finished runs are deleted in bounded batches that wait for no lock;
// accepted deliveries, unfinished runs, recent rows and each resource's latest finished sweep stay.
import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import { sql } from 'kysely'
import pg from 'pg'
import { beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { insertRejectedDelivery } from '../../src/store/inbox-insert.ts'
import {
  pruneHistoryBatch,
  pruneInboxBatch,
  pruneRunsBatch,
  withRetentionLock,
} from '../../src/store/retention.ts'
import { claimSweep, createRun, finishSweep, type SweepKey } from '../../src/store/runs.ts'
import {
  type PruneResult,
  pruneExpired,
  type RetentionSettings,
  startRetention,
} from '../../src/sync/retention.ts'
import { useTestDatabase } from '../support/database.ts'
import { insertAcceptedDelivery, markDeliveryProcessed } from '../support/inbox.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
const defaults: RetentionSettings = {
  inboxProcessedDays: 7,
  inboxRejectedDays: 30,
  runsDays: 90,
  historyDays: null,
}

beforeEach(async () => {
  await sql`truncate sync.inbox, sync.runs cascade`.execute(database.db)
})

const delivery = {
  model: 'person',
  event: 'update',
  shape: 'lean',
  record_id: 1,
  payload: '{}',
  body: null,
  reason: null,
}

/** A delivery received `receivedDaysAgo` and, when processed, applied `processedDaysAgo`. */
async function deliveryOf(
  status: 'accepted' | 'processed' | 'rejected' | 'failed',
  receivedDaysAgo: number,
  processedDaysAgo = receivedDaysAgo,
): Promise<number> {
  const id =
    status === 'rejected'
      ? await insertRejectedDelivery(database.db, { ...delivery, reason: 'no usable record id' })
      : await insertAcceptedDelivery(database.db, delivery)
  if (status === 'processed') await markDeliveryProcessed(database.db, id)
  if (status === 'failed') {
    await sql`update sync.inbox set status = 'failed', error = 'gone wrong' where id = ${id}`.execute(
      database.db,
    )
  }
  await sql`
    update sync.inbox set
      received_at = now() - make_interval(days => ${receivedDaysAgo}),
      processed_at = case when processed_at is not null then now() - make_interval(days => ${processedDaysAgo}) end
    where id = ${id}
  `.execute(database.db)
  return id
}

async function inboxIds(): Promise<number[]> {
  const rows = await database.db.selectFrom('sync.inbox').select('id').orderBy('id').execute()
  return rows.map((row) => row.id)
}

const noJobs = async () => {}

/** A run of these resources whose sweeps all start and end as `end` says, `daysAgo` days ago. */
async function finishedRun(resources: string[], daysAgo: number, end: 'succeeded' | 'failed' = 'succeeded') {
  const runId = await unfinishedRun(resources, daysAgo)
  for (const resource of resources) {
    const key: SweepKey = { runId, resource, lease: randomUUID() }
    await claimSweep(database.db, key)
    await finishSweep(
      database.db,
      noJobs,
      key,
      end === 'failed' ? { status: 'failed', error: 'the CRM answered 503' } : { status: 'succeeded' },
    )
  }
  await backdateRun(runId, daysAgo)
  return runId
}

/** A run whose first sweep is running, created `daysAgo` days ago. */
async function unfinishedRun(resources: string[], daysAgo: number) {
  const result = await createRun(database.db, { mode: 'incremental', resources, requestedBy: 'test' }, noJobs)
  if (result.status !== 'created') throw new Error('run refused')
  await backdateRun(result.runId, daysAgo)
  return result.runId
}

async function backdateRun(runId: number, daysAgo: number) {
  const at = sql<Date>`now() - make_interval(days => ${daysAgo})`
  await sql`
    update sync.runs set created_at = ${at}, started_at = ${at},
      finished_at = case when finished_at is not null then ${at} end
    where id = ${runId}
  `.execute(database.db)
}

async function runIds(): Promise<number[]> {
  const rows = await database.db.selectFrom('sync.runs').select('id').orderBy('id').execute()
  return rows.map((row) => row.id)
}

const rowsOf = (result: PruneResult | null, table: string, status: string) =>
  result?.find((rows) => rows.table === table && rows.status === status)?.rows ?? 0

describe('pruneExpired', () => {
  it('deletes deliveries applied more than 7 days ago and rejected or failed ones older than 30 days', async () => {
    const keep = [
      await deliveryOf('processed', 6),
      await deliveryOf('processed', 10, 1), // arrived long ago, applied yesterday
      await deliveryOf('accepted', 400), // still to be applied, however old
      await deliveryOf('accepted', 0),
      await deliveryOf('rejected', 29),
      await deliveryOf('failed', 29),
    ]
    await deliveryOf('processed', 8)
    await deliveryOf('processed', 60)
    await deliveryOf('rejected', 31)
    await deliveryOf('failed', 45)

    const result = await pruneExpired({ db: database.db, retention: defaults, logger })

    expect(await inboxIds()).toEqual(keep)
    expect(result).toEqual([
      { table: 'sync.inbox', status: 'processed', rows: 2 },
      { table: 'sync.inbox', status: 'failed', rows: 1 },
      { table: 'sync.inbox', status: 'rejected', rows: 1 },
    ])
  })

  it('deletes runs finished more than 90 days ago with their sweeps, never an unfinished run', async () => {
    const oldPeople = await finishedRun(['crm.people', 'crm.companies'], 120, 'failed')
    const recentPeople = await finishedRun(['crm.people', 'crm.companies'], 89)
    const oldestTasks = await finishedRun(['crm.tasks'], 200)
    // The latest finished sweep of its resource: `status` shows it as the last run, however old.
    const lastTasks = await finishedRun(['crm.tasks'], 150)
    const runningTasks = await unfinishedRun(['crm.tasks'], 100)

    const result = await pruneExpired({ db: database.db, retention: defaults, logger })

    expect(await runIds()).toEqual([recentPeople, lastTasks, runningTasks])
    expect(rowsOf(result, 'sync.runs', 'failed')).toBe(1)
    expect(rowsOf(result, 'sync.runs', 'succeeded')).toBe(1)
    expect(rowsOf(result, 'sync.run_resources', 'failed')).toBe(2)
    expect(rowsOf(result, 'sync.run_resources', 'succeeded')).toBe(1)
    const sweeps = await database.db.selectFrom('sync.run_resources').select('run_id').execute()
    expect(sweeps.map((sweep) => sweep.run_id)).not.toContain(oldPeople)
    expect(sweeps.map((sweep) => sweep.run_id)).not.toContain(oldestTasks)
    expect(sweeps.filter((sweep) => sweep.run_id === recentPeople)).toHaveLength(2)
  })

  it('keeps everything of a kind whose retention is 0 (null: for ever)', async () => {
    const processed = await deliveryOf('processed', 3000)
    const run = await finishedRun(['crm.people'], 3000)
    await finishedRun(['crm.people'], 0)
    await deliveryOf('rejected', 31)

    const result = await pruneExpired({
      db: database.db,
      retention: { inboxProcessedDays: null, inboxRejectedDays: 30, runsDays: null, historyDays: null },
      logger,
    })

    expect(result).toEqual([{ table: 'sync.inbox', status: 'rejected', rows: 1 }])
    expect(await inboxIds()).toEqual([processed])
    expect(await runIds()).toContain(run)
  })

  it('deletes in batches of at most the batch size, oldest first, each its own statement, until none is left', async () => {
    const old = [] as number[]
    for (const days of [12, 11, 10, 9, 8]) old.push(await deliveryOf('processed', days))
    const recent = await deliveryOf('processed', 1)
    const first = await pruneInboxBatch(database.db, { statuses: ['processed'], olderThanDays: 7, limit: 2 })
    expect(first.pruned).toEqual([{ table: 'sync.inbox', status: 'processed', rows: 2 }])
    expect(first.deleted).toBe(2)
    expect(await inboxIds()).toEqual([...old.slice(2), recent])
    // The next batch starts where this one stopped: at the received_at of the newer of the two.
    const { rows } = await sql<{ at: Date }>`select now() - interval '11 days' as at`.execute(database.db)
    expect(Math.abs((first.after?.getTime() ?? 0) - (rows[0]?.at.getTime() ?? 0))).toBeLessThan(60_000)

    const batches: number[] = []
    const result = await pruneExpired({
      db: database.db,
      retention: defaults,
      logger,
      batchSize: 2,
      observer: { rowsPruned: (_table, _status, count) => batches.push(count) },
    })
    expect(batches).toEqual([2, 1])
    expect(rowsOf(result, 'sync.inbox', 'processed')).toBe(3)
    expect(await inboxIds()).toEqual([recent])

    const runs = [] as number[]
    for (const days of [120, 110, 100]) runs.push(await finishedRun(['crm.deals'], days))
    const last = await finishedRun(['crm.deals'], 1)
    const batch = await pruneRunsBatch(database.db, { olderThanDays: 90, limit: 2 })
    expect(batch.pruned).toEqual([
      { table: 'sync.run_resources', status: 'succeeded', rows: 2 },
      { table: 'sync.runs', status: 'succeeded', rows: 2 },
    ])
    expect(batch.deleted).toBe(2)
    expect(await runIds()).toEqual([runs[2], last])
    const next = await pruneRunsBatch(database.db, { olderThanDays: 90, limit: 2, after: batch.after })
    expect(next.deleted).toBe(1)
    expect(await runIds()).toEqual([last])
  })

  it('deletes versions of records replaced more than HISTORY_RETENTION_DAYS ago, never a current one', async () => {
    const { db } = database
    await sql`truncate history.crm_people_versions, history.crm_deals_versions`.execute(db)
    // Person 1: versions replaced 400, 300 and 10 days ago (each ends where the next begins), and the
    // current one (from 10 days on); person 2: one version, current for 500 days; deal 3: replaced 200
    // days ago. Written in this order (_seq).
    await sql`
      insert into history.crm_people_versions (id, name, _valid_from) values
        (1, 'a', now() - interval '500 days'),
        (1, 'b', now() - interval '400 days'),
        (1, 'c', now() - interval '300 days'),
        (1, 'd', now() - interval '10 days'),
        (2, 'e', now() - interval '500 days');
      insert into history.crm_deals_versions (id, name, _valid_from) values
        (3, 'f', now() - interval '300 days'),
        (3, 'g', now() - interval '200 days')`.execute(db)

    const none = await pruneExpired({ db, retention: defaults, logger })
    expect(none?.filter((rows) => rows.table.startsWith('history.'))).toEqual([])

    // A batch reads its limit of versions in the order of (id, _seq) and deletes the replaced among them.
    const batch = await pruneHistoryBatch(db, { table: 'history.crm_people', olderThanDays: 100, limit: 1 })
    expect(batch).toMatchObject({
      deleted: 1,
      more: true,
      pruned: [{ table: 'history.crm_people', status: 'replaced', rows: 1 }],
    })
    const kept = await pruneHistoryBatch(db, { table: 'history.crm_people', olderThanDays: 400, limit: 2 })
    expect(kept).toMatchObject({ deleted: 0, more: true, pruned: [] })
    const rest = await pruneHistoryBatch(db, {
      table: 'history.crm_people',
      olderThanDays: 400,
      limit: 3,
      after: kept.after,
    })
    expect(rest).toMatchObject({ deleted: 0, more: false })
    expect(JSON.parse(rest.after ?? '[]')[0]).toBe('2')
    const result = await pruneExpired({ db, retention: { ...defaults, historyDays: 100 }, logger })
    expect(result?.filter((rows) => rows.table.startsWith('history.'))).toEqual([
      { table: 'history.crm_people', status: 'replaced', rows: 1 },
      { table: 'history.crm_deals', status: 'replaced', rows: 1 },
    ])
    const { rows } = await sql<{ names: string }>`
      select string_agg(name, ',' order by name) as names from (
        select name from history.crm_people union all select name from history.crm_deals) v`.execute(db)
    expect(rows[0]?.names).toBe('c,d,e,g')
    // What is kept still answers as before: c from 300 days ago until d began.
    const ended = await sql<{ days: number }>`
      select round(extract(epoch from now() - _valid_to) / 86400)::int as days from history.crm_people
      where name = 'c'`.execute(db)
    expect(ended.rows).toEqual([{ days: 10 }])
  })

  it('passes over rows another transaction holds and never waits for the receiver', async () => {
    const held = await deliveryOf('processed', 8)
    await deliveryOf('processed', 8)
    const other = new pg.Client({ connectionString: database.url })
    await other.connect()
    try {
      await other.query('begin')
      await other.query('select id from sync.inbox where id = $1 for update', [held])
      // A delivery being accepted, not committed yet.
      await other.query(`insert into sync.inbox (status, model) values ('accepted', 'person')`)

      const result = await pruneExpired({ db: database.db, retention: defaults, logger })

      expect(rowsOf(result, 'sync.inbox', 'processed')).toBe(1)
      expect(await inboxIds()).toEqual([held])
      await other.query('commit')
    } finally {
      await other.end()
    }
    const next = await pruneExpired({ db: database.db, retention: defaults, logger })
    expect(rowsOf(next, 'sync.inbox', 'processed')).toBe(1)
  })

  it('gives up a batch that would wait long for a table lock, rather than queue others behind it', async () => {
    await deliveryOf('processed', 8)
    const other = new pg.Client({ connectionString: database.url })
    await other.connect()
    try {
      await other.query('begin')
      await other.query('lock table sync.inbox in exclusive mode') // as a migration might
      const started = Date.now()
      await expect(pruneExpired({ db: database.db, retention: defaults, logger })).rejects.toThrow(
        /lock timeout/,
      )
      expect(Date.now() - started).toBeLessThan(10_000)
      await other.query('rollback')
    } finally {
      await other.end()
    }
    expect(await inboxIds()).toHaveLength(1)
  })

  it('lets one process prune at a time: while another holds the lock, a pass does nothing', async () => {
    await deliveryOf('processed', 8)
    const inside = await withRetentionLock(database.db, () =>
      pruneExpired({ db: database.db, retention: defaults, logger }),
    )
    expect(inside).toBeNull()
    expect(await inboxIds()).toHaveLength(1)
    const after = await pruneExpired({ db: database.db, retention: defaults, logger })
    expect(rowsOf(after, 'sync.inbox', 'processed')).toBe(1)
  })
})

describe('startRetention', () => {
  it('prunes shortly after start, logs what it pruned, and stops', async () => {
    await deliveryOf('processed', 8)
    await deliveryOf('rejected', 31)
    const lines: string[] = []
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    })
    let pruned!: () => void
    const firstBatch = new Promise<void>((resolve) => {
      pruned = resolve
    })
    const retention = startRetention(
      {
        db: database.db,
        retention: defaults,
        logger: createLogger({ level: 'info', destination }),
        // The rejected deliveries are the last of these to go: stop() then ends the pass.
        observer: { rowsPruned: (_table, status) => status === 'rejected' && pruned() },
      },
      { firstDelayMs: 0 },
    )
    await firstBatch
    await retention.stop() // waits for the pass under way
    expect(await inboxIds()).toEqual([])
    const logged = lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'pruned expired rows')
    expect(logged?.pruned).toEqual({ 'sync.inbox.processed': 1, 'sync.inbox.rejected': 1 })
  })
})
