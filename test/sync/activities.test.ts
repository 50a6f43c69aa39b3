// crm.activities against the sandbox: the append-only log mirrored from empty and never tombstoned, and
// the log as a change feed: task and note changes (no webhooks) reach the mirror within a short poll
// while the incremental interval is an hour, and an idle poll costs one request.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { compareMirror, describe as describeDifferences } from '../../sandbox/mirror-truth.ts'
import { createUpstreamClients, createUpstreamMetrics } from '../../src/api-client/index.ts'
import type { Config } from '../../src/config/index.ts'
import { activities } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { readRun } from '../../src/store/runs.ts'
import { createActivityFeed } from '../../src/sync/feed/activity-feed.ts'
import type { RefreshJob } from '../../src/sync/job-queue.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'
import { logger, sandboxConfig, sweep, sweepDeps } from './support.ts'

const rig = useEngineRig()

const SEED = { people: 20, companies: 8, deals: 6, projects: 4, tasks: 20, protocols: 20, activities: 60 }

async function activityDifferences(db: Db, upstream: Sandbox): Promise<string[]> {
  const tables = await compareMirror(db, upstream, { include: (resource) => resource === activities })
  return describeDifferences(tables)
}

/** Creates, updates and destroys of every logged kind, as a user of the upstream's UI makes them. */
function someChanges(upstream: Sandbox, round: number) {
  const crm = upstream.control.crm
  const [task, otherTask] = crm.liveIds('tasks') as [number, number]
  const [person] = crm.liveIds('people') as [number]
  crm.update('tasks', task, { name: `Rückruf ${round}` })
  crm.destroy('tasks', otherTask)
  crm.update('people', person, { name: `Name ${round}` })
  crm.create('protocols', { name: `Notiz ${round}`, person_ids: [person] })
  crm.update('deals', crm.liveIds('deals')[0] as number, { name: `Deal ${round}` })
}

function feedOn(db: Db, config: Config, jobs: RefreshJob[]) {
  const clients = createUpstreamClients(config, { db, logger, metrics: createUpstreamMetrics() })
  return createActivityFeed({
    db,
    reader: clients.crm,
    logger,
    queueRefresh: async (_trx, job) => {
      jobs.push(job)
    },
  })
}

const activityRequests = (upstream: Sandbox) =>
  upstream.control.counters().crm.routes['GET /api/activities'] ?? 0

describe('crm.activities', () => {
  it('from empty a sweep makes the mirror equal the sandbox, and no sweep tombstones an activity', async () => {
    // Pages of 20: more than a hundred activities make several pages.
    const upstream = await startSandbox({
      seedSize: SEED,
      seed: 4,
      behaviour: { crmRateLimit: null, maxPerpage: 20 },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    for (let round = 0; round < 8; round++) someChanges(upstream, round)
    const upstreamCount = upstream.control.crm.liveIds('activities').length
    expect(upstreamCount).toBe(SEED.activities + 8 * 5)
    const config = sandboxConfig(upstream)
    const deps = sweepDeps(db, config)

    const first = await sweep(deps, { mode: 'incremental', resources: ['crm.activities'] })
    expect((await readRun(db, first))?.status).toBe('succeeded')
    expect(await activityDifferences(db, upstream)).toEqual([])
    // `change` is kept whole: before/after pairs of an update.
    const { rows } = await sql<{ change: unknown; verb: string; attachable_type: string }>`
      select change, verb, attachable_type from crm.activities
      where verb = 'update' and attachable_type = 'Task' order by id desc limit 1`.execute(db)
    expect(rows[0]?.change).toEqual({
      task: { action: 'update', changes: { name: ['Rückruf 6', 'Rückruf 7'] } },
    })

    // The feed's first poll writes the newest page and sets its cursor: 40 entries came since the
    // sweep, and the 20 behind that page are read by no poll. Behind a page the mirror holds whole,
    // the incremental walk still reads down to its watermark, and finds them.
    for (let round = 8; round < 16; round++) someChanges(upstream, round)
    const feed = feedOn(db, config, [])
    expect(await feed.pollOnce()).toMatchObject({ status: 'polled', activities: 20 })
    const mirrored = await sql<{ n: number }>`select count(*)::int as n from crm.activities`.execute(db)
    expect(upstream.control.crm.liveIds('activities').length - (mirrored.rows[0]?.n ?? 0)).toBe(20)
    const behind = await sweep(deps, { mode: 'incremental', resources: ['crm.activities'] })
    expect((await readRun(db, behind))?.status).toBe('succeeded')
    expect(await activityDifferences(db, upstream)).toEqual([])

    // Once the feed has written every entry it read since before the watermark, the walk stops at the
    // first page it holds whole within what the feed read, not at the lookback (which holds every
    // activity here): one request.
    someChanges(upstream, 16)
    expect(await feed.pollOnce()).toMatchObject({ activities: 5, gap: false })
    await sql`update sync.activity_feed set log_written_since = now() - interval '1 hour'`.execute(db)
    upstream.control.resetCounters()
    const incremental = await sweep(deps, { mode: 'incremental', resources: ['crm.activities'] })
    expect((await readRun(db, incremental))?.status).toBe('succeeded')
    expect(activityRequests(upstream)).toBe(1)
    expect(await activityDifferences(db, upstream)).toEqual([])

    // Pages the mirror holds whole but the feed has not read (a walk that failed after writing them)
    // do not stop the walk: behind them lie entries neither has written.
    const person = upstream.control.crm.liveIds('people')[1] as number
    for (let round = 0; round < 40; round++)
      upstream.control.crm.update('people', person, { name: `Runde ${round}` })
    // The feed has not polled since, yet counts as current.
    await sql`update sync.activity_feed set polled_at = now()`.execute(db)
    const crmClient = createUpstreamClients(config, { db, logger, metrics: createUpstreamMetrics() }).crm
    const page = await crmClient.index(activities, {
      page: 1,
      order: { field: 'created_at', direction: 'desc' },
    })
    await upsertRecords(db, activities, page.records, { source: 'fetch', fetchedAt: new Date() })
    const held = await sql<{ n: number }>`select count(*)::int as n from crm.activities`.execute(db)
    expect(upstream.control.crm.liveIds('activities').length - (held.rows[0]?.n ?? 0)).toBe(20)
    const pastHeld = await sweep(deps, { mode: 'incremental', resources: ['crm.activities'] })
    expect((await readRun(db, pastHeld))?.status).toBe('succeeded')
    expect(await activityDifferences(db, upstream)).toEqual([])

    // A row the upstream does not list (a log truncated upstream, say) stays live through a full sweep.
    await sql`insert into crm.activities (id, verb, created_at, updated_at) values (7, 'update', now(), now())`.execute(
      db,
    )
    upstream.control.resetCounters()
    const full = await sweep(deps, { mode: 'full', resources: ['crm.activities'] })
    expect((await readRun(db, full))?.status).toBe('succeeded')
    const routes = upstream.control.counters().crm.routes
    expect(Object.keys(routes)).toEqual(['GET /api/activities'])
    expect(await tombstone(db, activities, [7])).toEqual([])
    const { rows: deleted } = await sql<{ n: number }>`
      select count(*)::int as n from crm.activities where _deleted_at is not null`.execute(db)
    expect(deleted[0]?.n).toBe(0)
    await sql`delete from crm.activities where id = 7`.execute(db)
    expect(await activityDifferences(db, upstream)).toEqual([])
  })

  it('the feed reads newest first and stops at what it has read: an idle poll costs one request', async () => {
    const upstream = await startSandbox({ seedSize: SEED, seed: 6, behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const config = sandboxConfig(upstream)
    const jobs: RefreshJob[] = []
    const feed = feedOn(db, config, jobs)

    // The first poll sets the cursor: what came before is the sweeps' to find.
    expect(await feed.pollOnce()).toMatchObject({ status: 'polled', requests: 1, refreshes: 0 })
    upstream.control.resetCounters()
    expect(await feed.pollOnce()).toMatchObject({ requests: 1, activities: 0, refreshes: 0 })
    expect(activityRequests(upstream)).toBe(1)

    const crm = upstream.control.crm
    const [task, goneTask] = crm.liveIds('tasks') as [number, number]
    crm.update('tasks', task, { name: 'geändert' })
    crm.destroy('tasks', goneTask)
    const note = crm.create('protocols', { name: 'neu' })
    const polled = await feed.pollOnce()
    expect(polled).toMatchObject({ requests: 1, activities: 3, refreshes: 3, gap: false })
    expect(jobs.map((job) => `${job.resource} ${job.id}`).sort()).toEqual(
      [`crm.tasks ${task}`, `crm.tasks ${goneTask}`, `crm.notes ${note.id}`].sort(),
    )
    expect(jobs.every((job) => job.askedAt !== undefined)).toBe(true)

    // More new activities than a page: the read goes on to the page that reaches the cursor.
    jobs.length = 0
    const ids = crm.liveIds('tasks').slice(0, 15)
    for (let i = 0; i < 300; i++) crm.update('tasks', ids[i % ids.length] as number, { name: `Runde ${i}` })
    upstream.control.resetCounters()
    expect(await feed.pollOnce()).toMatchObject({ requests: 2, activities: 300, refreshes: 15 })
    expect(activityRequests(upstream)).toBe(2)
    expect(await feed.pollOnce()).toMatchObject({ requests: 1, activities: 0 })

    // With the filter honoured (the kinder variant) an idle poll is one short page.
    upstream.control.setBehaviour({ activityFilters: 'honoured' })
    crm.update('tasks', task, { name: 'noch einmal' })
    expect(await feed.pollOnce()).toMatchObject({ requests: 1, activities: 1, refreshes: 1 })
    upstream.control.resetCounters()
    expect(await feed.pollOnce()).toMatchObject({ requests: 1, activities: 0 })
    expect(activityRequests(upstream)).toBe(1)
    // What it read is in the mirror too: the first page (the whole seeded log) and every activity since.
    expect(crm.liveIds('activities')).toHaveLength(SEED.activities + 304)
    expect(await activityDifferences(db, upstream)).toEqual([])
    const written = async () =>
      (
        await sql<{ since: Date | null }>`select log_written_since as since from sync.activity_feed`.execute(
          db,
        )
      ).rows[0]?.since ?? null
    expect(await written()).not.toBeNull()

    // A feed that does not mirror the log (MIRROR_RESOURCES without it) says it has written nothing.
    const clients = createUpstreamClients(config, { db, logger, metrics: createUpstreamMetrics() })
    const reading = createActivityFeed({
      db,
      reader: clients.crm,
      logger,
      queueRefresh: async () => {},
      mirrored: new Set(['crm.tasks']),
    })
    await feed.release()
    crm.update('tasks', task, { name: 'nur gelesen' })
    expect(await reading.pollOnce()).toMatchObject({ status: 'polled', activities: 1 })
    expect(await written()).toBeNull()
  })

  it('while the feed answers for them, idle incremental sweeps of the resources it covers read nothing', async () => {
    const upstream = await startSandbox({ seedSize: SEED, seed: 9, behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const deps = sweepDeps(db, sandboxConfig(upstream, { ACTIVITY_POLL_SECONDS: '5' }))
    const covered = { mode: 'incremental' as const, resources: ['crm.people', 'crm.tasks', 'crm.activities'] }
    await sweep(deps, covered)
    const requestsOf = async (runId: number) =>
      Object.fromEntries(
        ((await readRun(db, runId))?.resources ?? []).map((swept) => [swept.resource, swept.api_requests]),
      )
    const feedState = (coveredSince: string, polledAt: string) =>
      sql`insert into sync.activity_feed (feed, covered_since, polled_at)
        values ('crm.activities', now() - ${coveredSince}::interval, now() - ${polledAt}::interval)
        on conflict (feed) do update set covered_since = excluded.covered_since, polled_at = excluded.polled_at
      `.execute(db)

    // The feed has read the log without a gap since before the watermark, and polled just now.
    await feedState('1 hour', '0 s')
    expect(await requestsOf(await sweep(deps, covered))).toEqual({
      'crm.people': 0,
      'crm.tasks': 0,
      'crm.activities': 1, // not a resource the log names: its sweep reads as ever
    })
    // The feed stopped polling: the sweeps read their newest pages again.
    await feedState('1 hour', '1 hour')
    const stalled = await requestsOf(await sweep(deps, covered))
    expect(stalled['crm.people']).toBeGreaterThan(0)
    expect(stalled['crm.tasks']).toBeGreaterThan(0)
    // A gap after the watermark (the feed answers only from then on): likewise.
    await feedState('0 s', '0 s')
    const gap = await requestsOf(await sweep(deps, covered))
    expect(gap['crm.people']).toBeGreaterThan(0)
    // A count that is due is taken whatever the feed says.
    await feedState('1 hour', '0 s')
    await sql`update sync.resource_state set last_remote_count_at = now() - interval '1 day',
      last_verified_at = now() - interval '1 day', last_full_sync_at = now() - interval '1 day'`.execute(db)
    const due = await requestsOf(await sweep(deps, covered))
    expect(due['crm.people']).toBeGreaterThan(0)
    expect(due['crm.tasks']).toBeGreaterThan(0)
  })

  it('with the feed on and an hour between sweeps, task and note changes reach the mirror within seconds', async () => {
    const upstream = await startSandbox({ seedSize: SEED, seed: 8, behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: '3600',
        ACTIVITY_POLL_SECONDS: '1',
        CRM_RATE_LIMIT: '1000',
      }),
    )
    const inSync = async () => {
      expect(await differences(db, upstream)).toEqual([])
      return true
    }
    await waitFor(inSync, 60_000, 'the first sync')

    const crm = upstream.control.crm
    const [task, goneTask] = crm.liveIds('tasks') as [number, number]
    const started = Date.now()
    crm.update('tasks', task, { name: 'Angebot nachfassen', finished: true })
    crm.destroy('tasks', goneTask)
    const note = crm.create('protocols', { name: 'Telefonat', content: 'Rückruf vereinbart' })
    await waitFor(inSync, 15_000, 'the task and note changes in the mirror')
    const seconds = (Date.now() - started) / 1000
    expect(seconds).toBeLessThan(15)
    const { rows } = await sql<{ id: number; deleted: boolean }>`
      select id, _deleted_at is not null as deleted from crm.tasks where id in (${task}, ${goneTask})
      union all select id, _deleted_at is not null from crm.notes where id = ${note.id}`.execute(db)
    expect(rows.sort((a, b) => a.id - b.id)).toEqual(
      [
        { id: task, deleted: false },
        { id: goneTask, deleted: true },
        { id: note.id, deleted: false },
      ].sort((a, b) => a.id - b.id),
    )
  }, 120_000)
})
