// Opt-in measurement (ACTIVITY_FEED_MEASURE=1): the freshness of task and note changes and the idle
// requests per minute of the CRM, with the activity feed (ACTIVITY_POLL_SECONDS=5) and without it, in one
// run. Both engines run under the real budget (50 requests / 10 s) with INCREMENTAL_SYNC_INTERVAL=30 and
// SYNC_LOOKBACK_SECONDS=20.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { createTestDatabase, dropTestDatabase } from '../support/database.ts'
import { startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'

const SEED = { people: 40, companies: 10, deals: 8, projects: 6, tasks: 40, protocols: 30, activities: 100 }
const CHANGES = 4
const IDLE_MS = 60_000

async function measure(pollSeconds: string) {
  const upstream = await startSandbox({ seedSize: SEED, seed: 11 })
  const database = await createTestDatabase()
  const { db } = database
  const engine = await startEngine(upstream, database.url, {
    INCREMENTAL_SYNC_INTERVAL: '30',
    ACTIVITY_POLL_SECONDS: pollSeconds,
    // The feed answers for a resource once its watermark (a sweep's start less the lookback) is past
    // the feed's first poll: a short lookback puts the idle minute in that steady state within the test.
    SYNC_LOOKBACK_SECONDS: '20',
  })
  try {
    const inSync = async () => {
      expect(await differences(db, upstream)).toEqual([])
      return true
    }
    await waitFor(inSync, 120_000, 'the first sync')
    const crm = upstream.control.crm
    /** Seconds from each of CHANGES renames to the row in the mirror, the renames spaced over the cycle. */
    const changeToRow = async (collection: 'tasks' | 'protocols', table: 'crm.tasks' | 'crm.notes') => {
      const ids = crm.liveIds(collection)
      const freshness: number[] = []
      for (let i = 0; i < CHANGES; i++) {
        // Changes at different points of the sweep cycle.
        await new Promise((resolve) => setTimeout(resolve, 3_000 + i * 4_000))
        const id = ids[i] as number
        const name = `gemessen ${pollSeconds} ${i}`
        const started = Date.now()
        crm.update(collection, id, { name })
        await waitFor(
          async () => {
            const { rows } = await sql<{ name: string }>`
              select name from ${sql.table(table)} where id = ${id}`.execute(db)
            return rows[0]?.name === name ? true : undefined
          },
          120_000,
          `the ${collection} change in the mirror`,
        )
        freshness.push((Date.now() - started) / 1000)
      }
      return freshness
    }
    const freshness = await changeToRow('tasks', 'crm.tasks')
    const noteFreshness = await changeToRow('protocols', 'crm.notes')
    await waitFor(inSync, 120_000, 'in sync before the idle minute')
    upstream.control.resetCounters()
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS))
    const counters = upstream.control.counters().crm
    const idlePerMinute = (counters.requests * 60_000) / IDLE_MS
    return { pollSeconds, freshness, noteFreshness, idlePerMinute, routes: counters.routes }
  } finally {
    await engine.stop()
    await upstream.stop()
    await dropTestDatabase(database)
  }
}

describe.skipIf(!process.env.ACTIVITY_FEED_MEASURE)('the activity feed, measured', () => {
  it('freshness of task and note changes and idle requests per minute, with and without the feed', async () => {
    const results = [await measure('5'), await measure('0')]
    for (const result of results) console.log(JSON.stringify(result))
  }, 900_000)
})
