// The job queue as a process that dies leaves it: a tick of a singleton queue that its process left
// active is failed by its missed heartbeats, so that the next tick is not held back until its expiry;
// sweep slots are per upstream service.
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import type { SweepJob } from '../../src/store/runs.ts'
import {
  enqueueRefresh,
  type JobQueue,
  QUEUES,
  type RefreshJob,
  recordChecks,
  retryWindowSeconds,
  startJobQueue,
  sweepWorkOptions,
} from '../../src/sync/job-queue.ts'
import { queuedRefreshes } from '../../src/sync/refresh/backlog.ts'
import { sweepEnqueuer } from '../../src/sync/runs.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'

const logger = createLogger({ level: 'silent' })

describe('job queue', () => {
  const database = useTestDatabase()
  let boss: JobQueue | undefined
  afterAll(async () => {
    await boss?.stop({ graceful: false })
  })

  it.each([QUEUES.incrementalTick.name, QUEUES.fullTick.name, QUEUES.hooksCheck.name])(
    'fails a %s job whose worker died, within seconds rather than at its expiry',
    async (queue) => {
      boss ??= await startJobQueue(database.url, logger)
      const id = await boss.send(queue, null)
      expect(id).toBeTruthy()
      // Taken by a worker that never beats: what a process killed mid-tick leaves behind.
      const [taken] = await boss.fetch(queue)
      expect(taken?.id).toBe(id)
      const job = await waitFor(
        async () => {
          const job = await boss?.getJobById(queue, id as string)
          return job?.state === 'failed' ? job : undefined
        },
        30_000,
        `the ${queue} job failed by its missed heartbeats`,
      )
      expect(job.output).toMatchObject({ value: { message: 'job heartbeat timeout' } })
      // the singleton queue takes the next tick
      expect(await boss.send(queue, null)).toBeTruthy()
    },
    40_000,
  )
})

describe('the refresh backlog', () => {
  const database = useTestDatabase()
  let boss: JobQueue | undefined
  afterAll(async () => {
    await boss?.stop({ graceful: false })
  })

  it('counts the queued refreshes of one resource through pg-boss, with the earliest delivery they answer', async () => {
    boss ??= await startJobQueue(database.url, logger)
    const queue = boss
    const send = (job: RefreshJob) =>
      database.db.transaction().execute((trx) => enqueueRefresh(queue, trx, job, 5))
    // Taken by a worker: no longer waiting in the queue.
    await send({ resource: 'crm.people', id: 4, receivedAt: '2026-11-27T08:00:00Z' })
    const taken = await queue.fetch<RefreshJob>(QUEUES.refresh.name)
    expect(taken.map((job) => job.data.id)).toEqual([4])
    await send({ resource: 'crm.people', id: 1, receivedAt: '2026-11-27T10:00:05Z' })
    await send({ resource: 'crm.people', id: 2, receivedAt: '2026-11-27T10:00:01Z' })
    await send({ resource: 'crm.people', id: 3 })
    await send({ resource: 'crm.people', id: 5, receivedAt: '2026-11-27T10:00:03Z' })
    await send({ resource: 'crm.deals', id: 1, receivedAt: '2026-11-27T09:00:00Z' })

    const read = queuedRefreshes(queue)
    expect(await read('crm.people', 100)).toEqual({ pending: 4, oldest: new Date('2026-11-27T10:00:01Z') })
    expect((await read('crm.people', 2)).pending).toBe(2)
    expect(await read('crm.companies', 100)).toEqual({ pending: 0, oldest: null })
  })
})

describe('sweep retries', () => {
  it('take a sweep up again after every crash of its process for at least an hour, none later than 10 s', () => {
    expect(retryWindowSeconds(QUEUES.sweep)).toBeGreaterThanOrEqual(3600)
    expect(QUEUES.sweep.retryDelayMax).toBeLessThanOrEqual(10)
  })
})

describe('sweep slots', () => {
  const database = useTestDatabase()

  it("are each service's own: CRM sweeps waiting for the CRM's budget hold no reservation sweep back", async () => {
    const boss = await startJobQueue(database.url, logger)
    const release = Promise.withResolvers<void>()
    const started: string[] = []
    try {
      const enqueue = sweepEnqueuer(boss)
      const jobs = ['crm.people', 'crm.companies', 'crm.deals', 'reservations.bookings']
      for (const [index, resource] of jobs.entries())
        await enqueue(database.db, { runId: index + 1, resource })
      // One slot a service: the first CRM sweep waits for ever (its budget), the other two queue.
      await boss.work<SweepJob>(QUEUES.sweep.name, sweepWorkOptions(1), async ([job]) => {
        started.push(job?.data.resource ?? '')
        if (job?.data.resource.startsWith('crm.')) await release.promise
      })
      await waitFor(
        async () => started.includes('reservations.bookings') || undefined,
        15_000,
        'the reservation sweep started beside a CRM sweep that holds its slot',
      )
      expect(started.filter((resource) => resource.startsWith('crm.'))).toHaveLength(1)
    } finally {
      release.resolve()
      await boss.stop({ graceful: false })
    }
  })
})

describe('record checks', () => {
  const database = useTestDatabase()

  it('are refresh jobs asked at the time they are queued, so that a later fetch answers them', async () => {
    const boss = await startJobQueue(database.url, logger)
    try {
      const before = Date.now()
      await recordChecks(boss, 1)(database.db, 'crm.tasks', [41, 42])
      const jobs = await boss.fetch<RefreshJob>(QUEUES.refresh.name, { batchSize: 5 })
      expect(jobs.map((job) => job.data.id).sort()).toEqual([41, 42])
      for (const job of jobs) {
        const asked = Date.parse(job.data.askedAt ?? '')
        expect(asked).toBeGreaterThanOrEqual(before - 1)
        expect(asked).toBeLessThanOrEqual(Date.now())
      }
    } finally {
      await boss.stop({ graceful: false })
    }
  })
})
