// A page's worth of changes between two requests: newest first, the records created in front move the
// next page onto the one just read, which then comes again. The walk of the activity log, and the
// activity feed's read, go on past such a repeat to the older pages (an index that ignores `page`
// repeats its first page, which is what ends a walk: test/api-client/paging.test.ts). The log is never
// walked whole again, so what a walk ended short of would be missing for good.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import {
  createUpstreamClients,
  createUpstreamMetrics,
  type ResourceReader,
} from '../../src/api-client/index.ts'
import { activities } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { readRun } from '../../src/store/runs.ts'
import { createActivityFeed } from '../../src/sync/feed/activity-feed.ts'
import { createTestDatabase } from '../support/database.ts'
import { useEngineRig } from '../support/engine.ts'
import { logger, pagesOneAtATime, sandboxConfig, sweep, sweepDeps } from './support.ts'

const rig = useEngineRig()

/** The sandbox's largest page: the log takes several. */
const PAGE = 5
const SEED = { people: 6, companies: 3, deals: 2, projects: 2, tasks: 4, protocols: 4, activities: 23 }

async function startLog(seed: number) {
  const upstream = await startSandbox({
    seedSize: SEED,
    seed,
    behaviour: { crmRateLimit: null, maxPerpage: PAGE },
  })
  rig.sandbox(upstream)
  const { db } = rig.database(await createTestDatabase())
  return { upstream, db }
}

/** A page's worth of new activities, as a user's edits of one person write them. */
function editsInFront(upstream: Sandbox, round: number) {
  const crm = upstream.control.crm
  const person = crm.liveIds('people')[0] as number
  for (let i = 0; i < PAGE; i++) crm.update('people', person, { name: `Runde ${round}.${i}` })
}

/** A reader that calls `after(page)` once each page of the log has arrived, before answering. */
function tapped(reader: ResourceReader, after: (page: number) => void): ResourceReader {
  return {
    ...reader,
    async index(resource, query) {
      const page = await reader.index(resource, query)
      if (resource.name === activities.name) after(page.page)
      return page
    },
  }
}

const upstreamIds = (upstream: Sandbox) => upstream.control.crm.liveIds('activities').map(Number)

async function mirroredIds(db: Db): Promise<Set<number>> {
  const { rows } = await sql<{ id: string }>`select id from crm.activities`.execute(db)
  return new Set(rows.map((row) => Number(row.id)))
}

describe("a page's worth of changes between two requests", () => {
  it('does not end the walk of the log: every entry listed when it began is mirrored', async () => {
    const { upstream, db } = await startLog(21)
    const before = upstreamIds(upstream)
    expect(before.length).toBeGreaterThan(3 * PAGE)
    // After page 2 the log gains a page in front: page 3 is page 2 again.
    const deps = sweepDeps(db, sandboxConfig(upstream), {
      wrap: (clients) => {
        const paced = pagesOneAtATime(clients)
        return {
          ...paced,
          crm: tapped(paced.crm, (page) => {
            if (page === 2) editsInFront(upstream, 0)
          }) as typeof paced.crm,
        }
      },
    })
    const runId = await sweep(deps, { mode: 'full', resources: [activities.name] })
    expect((await readRun(db, runId))?.status).toBe('succeeded')
    const mirrored = await mirroredIds(db)
    expect(before.filter((id) => !mirrored.has(id))).toEqual([])
  })

  it("does not end the feed's read: every entry since its cursor is written", async () => {
    const { upstream, db } = await startLog(22)
    const config = sandboxConfig(upstream)
    const crm = createUpstreamClients(config, { db, logger, metrics: createUpstreamMetrics() }).crm
    let shiftAfter = 0
    const reader = tapped(crm, (page) => {
      if (page === shiftAfter) editsInFront(upstream, page)
    })
    const feed = createActivityFeed({ db, reader, logger, queueRefresh: async () => {} })
    // The first poll sets the cursor at the newest entry.
    expect(await feed.pollOnce()).toMatchObject({ status: 'polled' })
    const cursor = Math.max(...upstreamIds(upstream))
    // Three pages of new entries; after the first page of the next poll, a page more in front.
    for (let round = 1; round <= 3; round++) editsInFront(upstream, round)
    const since = upstreamIds(upstream).filter((id) => id > cursor)
    expect(since).toHaveLength(3 * PAGE)
    shiftAfter = 1
    const polled = await feed.pollOnce()
    expect(polled).toMatchObject({ status: 'polled', gap: false })
    const mirrored = await mirroredIds(db)
    expect(since.filter((id) => !mirrored.has(id))).toEqual([])
  })
})
