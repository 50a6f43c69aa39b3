// What the activity feed does with what it cannot answer for: a gap longer than its page limit is
// handed to incremental sweeps of the resources it covers and of the log, at once; activities of a type it does not
// know are counted in the poll and logged once a type, not dropped silently; and a change the mirror
// holds already (a webhook brought it) costs no refresh.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { createUpstreamClients, createUpstreamMetrics } from '../../src/api-client/index.ts'
import { tasks } from '../../src/resources/index.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { createActivityFeed, FEED_COVERS } from '../../src/sync/feed/activity-feed.ts'
import type { RefreshJob } from '../../src/sync/job-queue.ts'
import { CRM_URL, capturedLogger, crmClient, useNock } from '../api-client/harness.ts'
import { createTestDatabase, dropTestDatabase, useTestDatabase } from '../support/database.ts'
import { logger, sandboxConfig } from './support.ts'

describe('a gap in the activity feed', () => {
  it('longer than its page limit is handed to incremental sweeps of what it covers', async () => {
    const upstream = await startSandbox({
      seedSize: { people: 10, tasks: 20, activities: 10 },
      behaviour: { crmRateLimit: null },
    })
    const database = await createTestDatabase()
    try {
      const { db } = database
      const clients = createUpstreamClients(sandboxConfig(upstream), {
        db,
        logger,
        metrics: createUpstreamMetrics(),
      })
      const jobs: RefreshJob[] = []
      const gaps: string[][] = []
      const feed = createActivityFeed({
        db,
        reader: clients.crm,
        logger,
        maxPages: 1,
        queueRefresh: async (_trx, job) => {
          jobs.push(job)
        },
        onGap: async (resources) => {
          gaps.push([...resources])
        },
      })
      expect(await feed.pollOnce()).toMatchObject({ status: 'polled', gap: false })
      // More new activities than one page of 250 while the feed was away.
      const tasks = upstream.control.crm.liveIds('tasks')
      for (let i = 0; i < 300; i++)
        upstream.control.crm.update('tasks', tasks[i % tasks.length] as number, { name: `Runde ${i}` })
      expect(await feed.pollOnce()).toMatchObject({ gap: true, requests: 1 })
      // The resources it covers, and the log itself: what the poll did not read is missing there too.
      expect(gaps).toEqual([[...FEED_COVERS, 'crm.activities']])
      // Read past the gap: the next poll reaches its cursor again and hands nothing over.
      expect(await feed.pollOnce()).toMatchObject({ gap: false, activities: 0 })
      expect(gaps).toHaveLength(1)
    } finally {
      await upstream.stop()
      await dropTestDatabase(database)
    }
  })
})

describe('activities of a type the feed does not know', () => {
  const database = useTestDatabase()
  useNock()

  const activity = (id: number, type: string, attachableId: number) => ({
    activity: {
      id,
      account_id: 87444,
      user_id: 1,
      attachable_id: attachableId,
      attachable_type: type,
      verb: 'update',
      confidential: false,
      change: {},
      created_at: `2025-03-03T10:00:${String(id % 60).padStart(2, '0')}.000+01:00`,
      updated_at: `2025-03-03T10:00:${String(id % 60).padStart(2, '0')}.000+01:00`,
    },
  })

  it('are counted in the poll and logged once a type', async () => {
    const { client } = crmClient(database.db)
    const { logger: captured, lines } = capturedLogger()
    const jobs: RefreshJob[] = []
    const feed = createActivityFeed({
      db: database.db,
      reader: client,
      logger: captured,
      queueRefresh: async (_trx, job) => {
        jobs.push(job)
      },
    })
    const pages = [
      [activity(10, 'Task', 5)],
      [
        activity(13, 'Invoice', 7),
        activity(12, 'Invoice', 8),
        activity(11, 'Task', 5),
        activity(10, 'Task', 5),
      ],
      [activity(14, 'Invoice', 9), activity(13, 'Invoice', 7)],
    ]
    for (const page of pages) {
      nock(CRM_URL).get('/api/activities').query(true).reply(200, page)
    }
    expect(await feed.pollOnce()).toMatchObject({ activities: 1, unknown: 0 })
    expect(await feed.pollOnce()).toMatchObject({ activities: 3, refreshes: 1, unknown: 2 })
    expect(await feed.pollOnce()).toMatchObject({ activities: 1, refreshes: 0, unknown: 1 })
    expect(jobs.map((job) => `${job.resource} ${job.id}`)).toEqual(['crm.tasks 5'])
    // A change the mirror holds already (a webhook brought it): no refresh, no second `show`.
    const { updated_at } = activity(15, 'Task', 6).activity
    await upsertRecords(
      database.db,
      tasks,
      [{ id: 6, name: 'Rückruf', created_at: updated_at, updated_at }],
      {
        source: 'fetch',
        fetchedAt: new Date(),
      },
    )
    nock(CRM_URL)
      .get('/api/activities')
      .query(true)
      .reply(200, [activity(15, 'Task', 6), activity(14, 'Invoice', 9)])
    expect(await feed.pollOnce()).toMatchObject({ activities: 1, refreshes: 0 })
    expect(jobs).toHaveLength(1)
    const warned = lines.filter((line) => line.includes('"attachableType":"Invoice"'))
    expect(warned).toHaveLength(1)
  })
})
