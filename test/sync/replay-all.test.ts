// The replay of every rejected or failed delivery since a time (src/sync/delivery/replay-all.ts),
// against a real database: what it touches, its progress saved after each batch, a cancel that stops it
// at its next batch, and a job that crashed going on after its cursor. Where something must happen in
// the middle of a run (a cancel from the page, the database failing), a trigger of the test does it.
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import {
  cancelDeliveryReplay,
  createDeliveryReplay,
  type ReplayedStatus,
  readDeliveryReplay,
} from '../../src/store/delivery-replays.ts'
import type { InboxStatus } from '../../src/store/schema.ts'
import { createReplayAllHandler } from '../../src/sync/delivery/replay-all.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })

// A day ago: every delivery below arrived before the replay is asked.
const T = new Date(Date.now() - 86_400_000)
const lean = { model: 'person', event: 'update', record_id: 7 }

type Kind = 'failed' | 'readable' | 'unreadable' | 'processed'
interface Seeded {
  failed: number[]
  readable: number[]
  unreadable: number[]
  processed: number[]
  /** Failed and rejected deliveries received before T. */
  before: number[]
}

/**
 * Since T: 450 failed, 20 rejected that read as deliveries today, 20 that still do not, and 30
 * applied, interleaved; before T: 10 failed and 5 rejected. Returns their ids by kind.
 */
async function seed(): Promise<Seeded> {
  const kinds: Kind[] = [
    ...Array<Kind>(450).fill('failed'),
    ...Array<Kind>(20).fill('readable'),
    ...Array<Kind>(20).fill('unreadable'),
    ...Array<Kind>(30).fill('processed'),
  ]
  // A fixed shuffle: every batch holds kinds of each sort.
  for (let i = 0; i < kinds.length; i++) {
    const j = (i * 13 + 17) % kinds.length
    ;[kinds[i], kinds[j]] = [kinds[j] as Kind, kinds[i] as Kind]
  }
  const row = (kind: Kind | 'before-failed' | 'before-rejected', receivedAt: Date) => {
    const status: InboxStatus =
      kind === 'processed' ? 'processed' : kind.endsWith('failed') ? 'failed' : 'rejected'
    const rejected = status === 'rejected'
    return {
      received_at: receivedAt,
      model: 'person',
      event: 'update',
      shape: rejected ? null : 'lean',
      record_id: rejected ? null : 7,
      payload: JSON.stringify(kind === 'unreadable' || kind === 'before-rejected' ? { hello: 1 } : lean),
      body: null,
      status,
      reason: rejected ? 'old reason' : null,
      error: status === 'failed' ? 'the database went away' : null,
      attempts: status === 'failed' ? 20 : 1,
    }
  }
  const before = [
    ...Array.from({ length: 10 }, () => row('before-failed', new Date(T.getTime() - 3_600_000))),
    ...Array.from({ length: 5 }, () => row('before-rejected', new Date(T.getTime() - 1))),
  ]
  const since = kinds.map((kind, i) => row(kind, new Date(T.getTime() + i * 1000)))
  // The earlier ones inserted last: ids do not follow received_at, the replay goes by both.
  const sinceIds = await insert(since)
  const beforeIds = await insert(before)
  const of = (kind: Kind) => sinceIds.filter((_, i) => kinds[i] === kind)
  return {
    failed: of('failed'),
    readable: of('readable'),
    unreadable: of('unreadable'),
    processed: of('processed'),
    before: beforeIds,
  }
}

async function insert(rows: object[]): Promise<number[]> {
  const inserted = await database.db
    .insertInto('sync.inbox')
    .values(rows as never)
    .returning('id')
    .execute()
  return inserted.map((r) => r.id).sort((a, b) => a - b)
}

const statusesOf = async (ids: number[]) => {
  const rows = await database.db
    .selectFrom('sync.inbox')
    .select(['status', 'reason'])
    .where('id', 'in', ids)
    .execute()
  return new Set(rows.map((r) => r.status))
}

// The database is there once the tests run.
const handler = (jobs: { id: string; data: unknown }[]) =>
  createReplayAllHandler({ db: database.db, logger })(jobs)
const runJob = (replayId: number) => handler([{ id: `job-${replayId}`, data: { replayId } }])

async function replaySinceT(statuses: ReplayedStatus[]) {
  return createDeliveryReplay(database.db, { since: T, statuses })
}

/** Runs `statement` (plpgsql) whenever the delivery `id` is written, in the writer's transaction. */
async function whenDeliveryWritten(id: number, statement: string): Promise<void> {
  await sql
    .raw(`
      create or replace function test_hook() returns trigger language plpgsql as $$
      begin ${statement}; return new; end $$;
      create trigger test_hook before update on sync.inbox
        for each row when (old.id = ${id}) execute function test_hook();
    `)
    .execute(database.db)
}

beforeEach(async () => {
  await sql`
    drop trigger if exists test_hook on sync.inbox;
    drop trigger if exists test_progress on sync.delivery_replays;
    truncate sync.inbox, sync.delivery_replays;
    create table if not exists test_progress (n serial, done int, cursor bigint, state text);
    truncate test_progress;
    create or replace function test_progress() returns trigger language plpgsql as $$
    begin insert into test_progress (done, cursor, state) values (new.done, new.cursor, new.state);
    return new; end $$;
    create trigger test_progress after update on sync.delivery_replays
      for each row execute function test_progress();
  `.execute(database.db)
})

/** Every write of a replay's row, in order: its progress as the page saw it. */
const progress = async () =>
  (
    await sql<{ done: number; cursor: number; state: string }>`
      select done, cursor, state from test_progress order by n`.execute(database.db)
  ).rows

describe('a replay of every rejected or failed delivery since a time', () => {
  it('replays those since T, in batches of 200 with the progress saved after each, and nothing else', async () => {
    const seeded = await seed()
    const replay = await replaySinceT(['rejected', 'failed'])
    expect(replay).toMatchObject({ state: 'running', total: 490, done: 0, cursor: 0 })

    await runJob(replay.id)

    const covered = [...seeded.failed, ...seeded.readable, ...seeded.unreadable].sort((a, b) => a - b)
    expect(await progress()).toEqual([
      { done: 200, cursor: covered[199], state: 'running' },
      { done: 400, cursor: covered[399], state: 'running' },
      { done: 490, cursor: covered[489], state: 'running' },
      { done: 490, cursor: covered[489], state: 'finished' },
    ])
    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({
      state: 'finished',
      done: 490,
      finished_at: expect.any(Date),
    })
    // failed ones and rejected ones that read as deliveries today are queued, their attempts cleared
    expect(await statusesOf([...seeded.failed, ...seeded.readable])).toEqual(new Set(['accepted']))
    const requeued = await database.db
      .selectFrom('sync.inbox')
      .select(['attempts', 'error', 'shape'])
      .where('id', 'in', seeded.readable)
      .execute()
    expect(new Set(requeued.map((r) => JSON.stringify(r)))).toEqual(
      new Set([JSON.stringify({ attempts: 0, error: null, shape: 'lean' })]),
    )
    // the others stay rejected, with today's reason
    const unreadable = await database.db
      .selectFrom('sync.inbox')
      .select(['status', 'reason'])
      .where('id', 'in', seeded.unreadable)
      .execute()
    for (const row of unreadable)
      expect(row).toEqual({ status: 'rejected', reason: expect.stringMatching(/unknown payload shape/) })
    // applied ones, and those received before T, are left alone
    expect(await statusesOf(seeded.processed)).toEqual(new Set(['processed']))
    const before = await database.db
      .selectFrom('sync.inbox')
      .select(['status', 'reason', 'attempts'])
      .where('id', 'in', seeded.before)
      .execute()
    expect(before.filter((r) => r.status === 'failed' && r.attempts === 20)).toHaveLength(10)
    expect(before.filter((r) => r.status === 'rejected' && r.reason === 'old reason')).toHaveLength(5)
  })

  it('touches only the statuses chosen', async () => {
    const seeded = await seed()
    const replay = await replaySinceT(['rejected'])
    expect(replay.total).toBe(40)
    await runJob(replay.id)
    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({ state: 'finished', done: 40 })
    expect(await statusesOf(seeded.readable)).toEqual(new Set(['accepted']))
    expect(await statusesOf(seeded.failed)).toEqual(new Set(['failed']))
  })

  it('stops at its next batch once cancelled, and a job taken again does nothing more', async () => {
    const seeded = await seed()
    const replay = await replaySinceT(['failed'])
    // The page's Cancel, landing while the first batch is replayed.
    await whenDeliveryWritten(
      seeded.failed[150] as number,
      `update sync.delivery_replays set state = 'cancelled', finished_at = now() where id = ${replay.id}`,
    )
    await runJob(replay.id)
    await runJob(replay.id)

    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({
      state: 'cancelled',
      done: 200,
      cursor: seeded.failed[199],
    })
    expect(await statusesOf(seeded.failed.slice(0, 200))).toEqual(new Set(['accepted']))
    expect(await statusesOf(seeded.failed.slice(200))).toEqual(new Set(['failed']))
  })

  it('replays nothing once cancelled before its job starts', async () => {
    const seeded = await seed()
    const replay = await replaySinceT(['rejected', 'failed'])
    expect(await cancelDeliveryReplay(database.db, replay.id)).toBe(true)
    expect(await cancelDeliveryReplay(database.db, replay.id)).toBe(false)
    await runJob(replay.id)
    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({ state: 'cancelled', done: 0 })
    expect(await statusesOf(seeded.failed)).toEqual(new Set(['failed']))
  })

  it('goes on after its cursor when run again after a crash, replaying no delivery twice', async () => {
    const seeded = await seed()
    const replay = await replaySinceT(['failed'])
    // The database fails the replay of the second batch's first delivery: the job fails there.
    await whenDeliveryWritten(seeded.failed[200] as number, `raise exception 'the database went away'`)
    await expect(runJob(replay.id)).rejects.toThrow(/the database went away/)
    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({
      state: 'running',
      done: 200,
      cursor: seeded.failed[199],
    })
    expect(await statusesOf(seeded.failed.slice(0, 200))).toEqual(new Set(['accepted']))
    expect(await statusesOf(seeded.failed.slice(200))).toEqual(new Set(['failed']))

    // The workers fail the first batch again meanwhile: a replay that went over it again would queue it.
    await sql`update sync.inbox set status = 'failed' where id <= ${seeded.failed[199]} and status = 'accepted'`.execute(
      database.db,
    )
    await sql`drop trigger test_hook on sync.inbox`.execute(database.db)
    await runJob(replay.id)

    expect(await readDeliveryReplay(database.db, replay.id)).toMatchObject({
      state: 'finished',
      done: 450,
      cursor: seeded.failed[449],
    })
    expect(await statusesOf(seeded.failed.slice(0, 200))).toEqual(new Set(['failed']))
    expect(await statusesOf(seeded.failed.slice(200))).toEqual(new Set(['accepted']))
  })

  it('drops a job whose payload it cannot read', async () => {
    await seed()
    await expect(handler([{ id: 'job-x', data: { replayId: 'one' } }])).resolves.toBeUndefined()
    expect(await progress()).toEqual([])
  })
})
