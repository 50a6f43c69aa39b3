// Runs: one active sweep per resource; a request for a busy resource waits for it (an incremental
// sweep makes way for a full one), a request that a queued or running run already covers names that
// run (even when requests race); scheduled full runs are never skipped; the run's status derived from
// its sweeps, abandoned sweeps, the job payload checked on entry, and runs worked by pg-boss end to end.
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { people, resourceNames } from '../../src/resources/index.ts'
import {
  abandonSweep,
  claimSweep,
  finishSweep,
  readRun,
  readRuns,
  type SweepJob,
} from '../../src/store/runs.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { mirroredResources, RunRequestError, startRun, sweepEnqueuer } from '../../src/sync/runs.ts'
import { scheduledRun } from '../../src/sync/schedules.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import {
  logger,
  mirrorOf,
  sandboxConfig,
  startTestRun,
  sweepDeps,
  tappedPeople,
  truthOf,
  withCrmPages,
} from './support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: { people: 60 }, behaviour: { crmRateLimit: null } })
})
afterAll(async () => {
  await sandbox?.stop()
})

/** Finishes every unfinished sweep, so that the next test starts with free resources. */
async function settleAll() {
  const open = await database.db
    .selectFrom('sync.run_resources')
    .select(['run_id', 'resource'])
    .where('status', 'in', ['queued', 'running'])
    .execute()
  for (const sweep of open)
    await abandonSweep(database.db, async () => {}, sweep.run_id, sweep.resource, 'test over')
}

describe('starting runs', () => {
  afterEach(settleAll)

  it('queues a sweep behind the one holding its resource; a run covering the request is named', async () => {
    const { result: first, jobs } = await startTestRun(database.db, {
      mode: 'incremental',
      resources: ['crm.people', 'crm.tasks'],
    })
    expect(first.status).toBe('started')
    expect(jobs.map((job) => job.resource)).toEqual(['crm.people', 'crm.tasks'])
    const firstId = first.status === 'started' ? first.runId : 0

    // A full run while the incremental one holds tasks: accepted, its sweep of tasks waits.
    const full = await startTestRun(database.db, { mode: 'full', resources: ['crm.deals', 'crm.tasks'] })
    expect(full.result).toMatchObject({ status: 'started', covered: [], waiting: ['crm.tasks'] })
    expect(full.jobs.map((job) => job.resource)).toEqual(['crm.deals'])
    const fullId = full.result.status === 'started' ? full.result.runId : 0
    const waiting = await readRun(database.db, fullId)
    expect(waiting?.resources.map((sweep) => [sweep.resource, sweep.status, sweep.waiting])).toEqual([
      ['crm.deals', 'queued', false],
      ['crm.tasks', 'queued', true],
    ])

    // The same full request again: the first full run covers it, and is named.
    const again = await startTestRun(database.db, { mode: 'full', resources: ['crm.tasks', 'crm.deals'] })
    expect(again.result).toEqual({ status: 'conflict', runId: fullId, resource: 'crm.deals' })
    expect(again.jobs).toEqual([])

    // The incremental sweep of tasks ends: the waiting full sweep's job is sent in the same transaction.
    const handedOver: SweepJob[] = []
    const key = { runId: firstId, resource: 'crm.tasks', lease: 'a' }
    await claimSweep(database.db, key)
    await finishSweep(database.db, async (_trx, job) => void handedOver.push(job), key, {
      status: 'succeeded',
    })
    expect(handedOver).toEqual([{ runId: fullId, resource: 'crm.tasks' }])
    const started = await readRun(database.db, fullId)
    expect(started?.resources.find((sweep) => sweep.resource === 'crm.tasks')?.waiting).toBe(false)
  })

  it('leaves busy resources out of a run that skips them (as schedules do)', async () => {
    const { result: full } = await startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })
    const fullId = full.status === 'started' ? full.runId : 0
    const jobs: { resource: string }[] = []
    const deps = {
      db: database.db,
      reservationEnabled: false,
      enqueue: async (_: unknown, job: { resource: string }) => {
        jobs.push(job)
      },
    }
    const tick = {
      mode: 'incremental',
      resources: ['crm.people', 'crm.tasks'],
      requestedBy: 'schedule',
    } as const
    const started = await startRun(deps, { ...tick, whenBusy: 'skip' })
    expect(started).toMatchObject({ status: 'started', covered: [{ resource: 'crm.people', runId: fullId }] })
    expect(jobs.map((job) => job.resource)).toEqual(['crm.tasks'])
    // Nothing left to sweep: refused like any other request.
    expect(await startRun(deps, { ...tick, whenBusy: 'skip' })).toEqual({
      status: 'conflict',
      runId: fullId,
      resource: 'crm.people',
    })
  })

  it('lets exactly one of racing requests win, across connections', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, () => startTestRun(database.db, { mode: 'full', resources: ['crm.people'] })),
    )
    const started = results.filter((race) => race.result.status === 'started')
    expect(started).toHaveLength(1)
    const winner = started[0]?.result.status === 'started' ? started[0].result.runId : 0
    for (const race of results.filter((race) => race.result.status === 'conflict')) {
      expect(race.result).toEqual({ status: 'conflict', runId: winner, resource: 'crm.people' })
    }
    expect(results.flatMap((race) => race.jobs)).toHaveLength(1)
  })

  it('takes every enabled resource by default and refuses unknown or switched-off ones', async () => {
    const crmNames = resourceNames.filter((name) => name.startsWith('crm.'))
    expect(mirroredResources({ reservationEnabled: false }).map((resource) => resource.name)).toEqual(
      crmNames,
    )
    const jobs: { resource: string }[] = []
    const deps = {
      db: database.db,
      reservationEnabled: false,
      enqueue: async (_: unknown, job: { resource: string }) => {
        jobs.push(job)
      },
    }
    const started = await startRun(deps, { mode: 'full', requestedBy: 'test' })
    expect(started.status).toBe('started')
    expect(jobs).toHaveLength(crmNames.length)
    await expect(
      startRun(deps, { mode: 'full', resources: ['crm.nonsense'], requestedBy: 'test' }),
    ).rejects.toThrow(RunRequestError)
    await expect(
      startRun(deps, { mode: 'full', resources: ['reservations.contacts'], requestedBy: 'test' }),
    ).rejects.toThrow(/RESERVATION_BASE_URL/)
  })

  it('takes only the resources MIRROR_RESOURCES selects, and refuses the others', async () => {
    const jobs: { resource: string }[] = []
    const deps = {
      db: database.db,
      reservationEnabled: true,
      resources: ['crm.people', 'reservations.bookings'],
      enqueue: async (_: unknown, job: { resource: string }) => {
        jobs.push(job)
      },
    }
    const started = await startRun(deps, { mode: 'incremental', requestedBy: 'test' })
    expect(started.status).toBe('started')
    expect(jobs.map((job) => job.resource).sort()).toEqual(['crm.people', 'reservations.bookings'])
    await expect(
      startRun(deps, { mode: 'full', resources: ['crm.deals'], requestedBy: 'test' }),
    ).rejects.toThrow('crm.deals is not mirrored: MIRROR_RESOURCES leaves it out')
  })

  it('abandons a sweep that has shown no progress for too long, then starts', async () => {
    const { result: stale } = await startTestRun(database.db, { mode: 'full', resources: ['crm.projects'] })
    const staleId = stale.status === 'started' ? stale.runId : 0
    await sql`update sync.run_resources set progress_at = now() - interval '3 hours' where run_id = ${staleId}`.execute(
      database.db,
    )
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.projects'] })
    expect(result.status).toBe('started')
    const abandoned = await readRun(database.db, staleId)
    expect(abandoned?.status).toBe('failed')
    expect(abandoned?.error).toMatch(/^crm\.projects: abandoned: no progress for 7200 s/)
  })
})

describe('routine sweeps never block a full one', () => {
  afterEach(settleAll)

  it('a scheduled full run is not skipped: its sweep of a busy resource waits', async () => {
    const jobs: SweepJob[] = []
    const runs = {
      db: database.db,
      reservationEnabled: false,
      enqueue: async (_: unknown, job: SweepJob) => void jobs.push(job),
    }
    const incremental = await scheduledRun(runs, 'incremental')
    expect(incremental).toMatchObject({ status: 'started', waiting: [] })
    const full = await scheduledRun(runs, 'full')
    expect(full).toMatchObject({ status: 'started', covered: [] })
    if (full.status !== 'started') return
    expect(full.waiting).toHaveLength(resourceNames.filter((name) => name.startsWith('crm.')).length)
    // The next incremental tick leaves every resource to the full run that waits for it.
    expect(await scheduledRun(runs, 'incremental')).toMatchObject({ status: 'conflict' })
    // A second scheduled full run is covered by the first.
    expect(await scheduledRun(runs, 'full')).toMatchObject({ status: 'conflict', runId: full.runId })
  })

  it('an incremental sweep makes way for a full one at its next page, and runs again after it', async () => {
    const jobs: SweepJob[] = []
    const enqueue = async (_: unknown, job: SweepJob) => void jobs.push(job)
    let full: Awaited<ReturnType<typeof startRun>> | undefined
    let pages = 0
    const deps = sweepDeps(database.db, withCrmPages(sandboxConfig(sandbox), 10), {
      enqueue,
      // An operator asks for a full resync once the incremental sweep has its first page.
      wrap: tappedPeople(async () => {
        if (++pages === 1) {
          const runs = { db: database.db, reservationEnabled: false, enqueue }
          full = await startRun(runs, { mode: 'full', resources: ['crm.people'], requestedBy: 'admin' })
        }
      }),
    })
    const handler = createSweepHandler(deps)
    const work = async () => {
      const job = jobs.shift()
      if (!job) throw new Error('no job was sent')
      await handler([{ id: `${job.runId}`, data: job, signal: new AbortController().signal }])
      return job
    }
    // A first incremental sweep has no watermark: it walks every page (6 of 10 people).
    const { result } = await startTestRun(
      database.db,
      { mode: 'incremental', resources: ['crm.people'] },
      jobs,
    )
    const incrementalId = result.status === 'started' ? result.runId : 0
    await work()
    // Made way before the end of its walk (6 pages), at the first checkpoint after the request: the
    // pages under way by then (fetched ahead of the one applied) are read, no more.
    expect(pages).toBeLessThan(6)
    expect(full).toMatchObject({ status: 'started', waiting: ['crm.people'] })
    const fullId = full?.status === 'started' ? full.runId : 0
    expect((await readRun(database.db, incrementalId))?.resources[0]).toMatchObject({
      status: 'queued',
      waiting: true,
    })
    // The full sweep's job was sent when the incremental one made way; it runs, then hands back.
    expect(await work()).toEqual({ runId: fullId, resource: 'crm.people' })
    expect((await readRun(database.db, fullId))?.status).toBe('succeeded')
    const afterFull = pages
    // The full sweep began after the incremental one was asked for and read every page since: the
    // incremental one ends without a request of its own.
    expect(await work()).toEqual({ runId: incrementalId, resource: 'crm.people' })
    expect((await readRun(database.db, incrementalId))?.status).toBe('succeeded')
    expect(pages).toBe(afterFull)
    expect(jobs).toEqual([])
  })
})

describe('run status', () => {
  it('is queued, then running, then failed when any sweep failed, with its error', async () => {
    const { result } = await startTestRun(database.db, {
      mode: 'full',
      resources: ['crm.people', 'crm.tasks'],
    })
    const runId = result.status === 'started' ? result.runId : 0
    expect((await readRun(database.db, runId))?.status).toBe('queued')

    const peopleKey = { runId, resource: 'crm.people', lease: 'a' }
    const tasksKey = { runId, resource: 'crm.tasks', lease: 'b' }
    expect(await claimSweep(database.db, peopleKey)).toMatchObject({
      mode: 'full',
      checkpoint: null,
      records: 0,
    })
    const running = await readRun(database.db, runId)
    expect(running).toMatchObject({ status: 'running', finished_at: null })
    expect(running?.started_at).toBeInstanceOf(Date)
    await claimSweep(database.db, tasksKey)
    await finishSweep(database.db, async () => {}, peopleKey, { status: 'succeeded' })
    expect((await readRun(database.db, runId))?.status).toBe('running')
    await finishSweep(database.db, async () => {}, tasksKey, {
      status: 'failed',
      error: 'crm GET /api/tasks: rate limited (429)',
    })

    const run = await readRun(database.db, runId)
    expect(run).toMatchObject({
      status: 'failed',
      error: 'crm.tasks: crm GET /api/tasks: rate limited (429)',
    })
    expect(run?.finished_at).toBeInstanceOf(Date)
    expect(run?.resources.map((sweep) => [sweep.resource, sweep.status])).toEqual([
      ['crm.people', 'succeeded'],
      ['crm.tasks', 'failed'],
    ])
    expect((await readRuns(database.db, { limit: 1 }))[0]?.id).toBe(runId)
    // A finished sweep is not claimed again (a late duplicate of its job does nothing).
    expect(await claimSweep(database.db, { ...peopleKey, lease: 'c' })).toBeNull()
  })

  it('is succeeded only when every sweep succeeded; two finishing at once both count', async () => {
    const names = ['crm.people', 'crm.companies', 'crm.deals', 'crm.projects']
    const { result } = await startTestRun(database.db, { mode: 'incremental', resources: names })
    const runId = result.status === 'started' ? result.runId : 0
    const keys = names.map((resource, i) => ({ runId, resource, lease: `lease-${i}` }))
    for (const key of keys) await claimSweep(database.db, key)
    await Promise.all(
      keys.map((key) => finishSweep(database.db, async () => {}, key, { status: 'succeeded' })),
    )
    expect((await readRun(database.db, runId))?.status).toBe('succeeded')
  })
})

describe('the sweep handler', () => {
  it('drops an unreadable payload and fails the sweep of a resource it does not know', async () => {
    const handler = createSweepHandler(sweepDeps(database.db, sandboxConfig(sandbox)))
    const signal = new AbortController().signal
    await handler([{ id: 'old-1', data: { run: 'x' }, signal }])
    const { result } = await startTestRun(database.db, { mode: 'full', resources: ['crm.tasks'] })
    const runId = result.status === 'started' ? result.runId : 0
    await sql`update sync.run_resources set resource = 'crm.nonsense' where run_id = ${runId}`.execute(
      database.db,
    )
    await handler([{ id: 'old-2', data: { runId, resource: 'crm.nonsense' }, signal }])
    expect(await readRun(database.db, runId)).toMatchObject({
      status: 'failed',
      error: 'crm.nonsense: unknown resource crm.nonsense',
    })
  })

  it('works runs through pg-boss: a full run asked for during an incremental one waits, then runs', async () => {
    const boss = await startJobQueue(database.url, logger)
    try {
      const deps = { db: database.db, reservationEnabled: true, enqueue: sweepEnqueuer(boss) }
      const started = await startRun(deps, {
        mode: 'incremental',
        resources: ['crm.people'],
        requestedBy: 'test',
      })
      const full = await startRun(deps, { mode: 'full', resources: ['crm.people'], requestedBy: 'admin' })
      expect(full).toMatchObject({ status: 'started', waiting: ['crm.people'] })
      const jobs = await sql<{ count: number }>`
        select count(*)::int as count from pgboss.job where name = ${QUEUES.sweep.name}
      `.execute(database.db)
      expect(jobs.rows[0]?.count).toBe(1)

      await boss.work(
        QUEUES.sweep.name,
        { pollingIntervalSeconds: 0.5 },
        createSweepHandler(sweepDeps(database.db, sandboxConfig(sandbox), { enqueue: deps.enqueue })),
      )
      const finished = async (runId: number) =>
        waitFor(
          async () => {
            const current = await readRun(database.db, runId)
            return current?.finished_at ? current : undefined
          },
          20_000,
          `run ${runId} to finish`,
        )
      const incrementalRun = await finished(started.status === 'started' ? started.runId : 0)
      const fullRun = await finished(full.status === 'started' ? full.runId : 0)
      expect([incrementalRun.status, fullRun.status]).toEqual(['succeeded', 'succeeded'])
      const truth = truthOf(
        sandbox.control.crm
          .liveIds('people')
          .map((id) => sandbox.control.crm.get('people', id) as { id: number }),
        people,
      )
      expect(await mirrorOf(database.db, people)).toEqual(truth)
    } finally {
      await boss.stop({ graceful: false })
    }
  })
})
