// People's historic events and assistants, with the engine as `npm start` runs it against the sandbox:
// two pages of people, the CRM's hostile faults (500s and 429s), nested listings 10 items a page. The
// details pass waits for the first sync, reads every person once, goes on where it stood after a
// restart, reads a changed person again, and after a full run reads everyone again, which brings the
// changes the sandbox makes without a word (by default a change to them leaves the person alone).
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { readDetailsProgress } from '../../src/store/record-details.ts'
import { readRuns } from '../../src/store/runs.ts'
import { createTestDatabase } from '../support/database.ts'
import { type Engine, startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { sampleOf } from '../support/prometheus.ts'
import { requestRun } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()

/** Two pages of people at 250 a page; a little of everything else. */
const SEED = { people: 260, companies: 40, deals: 30, projects: 30, tasks: 30, protocols: 30 }
const NESTED = ['GET /api/people/:id/historic_events', 'GET /api/people/:id/assis']

const nestedRequests = (upstream: Sandbox) => {
  const { routes } = upstream.control.counters().crm
  return NESTED.reduce((sum, route) => sum + (routes[route] ?? 0), 0)
}

/** The runs not finished yet (the first sync: the run at start). */
async function unfinishedRuns(db: Db): Promise<number[]> {
  const runs = await readRuns(db)
  return runs.length === 0 ? [0] : runs.filter((run) => !run.finished_at).map((run) => run.id)
}

/** The people whose historic events or assistants differ from the sandbox's. */
async function differingPeople(db: Db, upstream: Sandbox): Promise<number[]> {
  const lines = await differences(db, upstream, { details: true, limit: 1000 })
  const ids = lines.flatMap((line) => /^crm\.(?:historic_events|assistants) (\d+):/.exec(line)?.[1] ?? [])
  return [...new Set(ids.map(Number))].sort((a, b) => a - b)
}

const start = (upstream: Sandbox, url: string) =>
  startEngine(upstream, url, {
    DETAILS_BUDGET_PERCENT: '50',
    // 1,000 requests a window for the pass: every person in one batch.
    CRM_RATE_LIMIT: '2000',
    HOOK_OBJECT_TYPE: 'lean',
    // Incremental runs are slots aligned on the clock: a day's makes the one at start the only one.
    INCREMENTAL_SYNC_INTERVAL: '86400',
  })

async function detailsReadBy(engine: Engine): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${engine.port}/metrics`)).text()
  const read = (outcome: string) =>
    sampleOf(text, 'crm_sync_details_reads_total', { resource: people.name, outcome }) ?? 0
  return read('read') + read('gone')
}

describe("people's historic events and assistants", () => {
  it('are read once each after the first sync, again when changed, and all again after a full run', async () => {
    const upstream = rig.sandbox(
      await startSandbox({ seedSize: SEED, seed: 23, behaviour: { crmRateLimit: null } }),
    )
    // 500s, and 429s (each pauses every reader for 1 to 5 s, and the pass a period: rarer here).
    upstream.control.setFaults({ crm: { errorRate: 0.01, throttleRate: 0.005 } })
    const { db, url } = rig.database(await createTestDatabase())
    const first = await start(upstream, url)

    // The first sync is not delayed: no list is read before the run at start has ended (the requests
    // counted first, then the runs: a request seen with the run unfinished after it was sent first).
    let readDuringFirstSync: number[] = []
    await waitFor(
      async () => {
        const requests = nestedRequests(upstream)
        const unfinished = await unfinishedRuns(db)
        if (requests > 0 && unfinished.length > 0) readDuringFirstSync = unfinished
        return unfinished.length === 0 ? true : undefined
      },
      60_000,
      'the first sync',
    )
    expect(readDuringFirstSync, 'lists read while these runs had not ended').toEqual([])
    // Slower answers from here on, so that the engine can be stopped midway through the pass.
    upstream.control.setFaults({ crm: { latencyMs: 15 } })
    const records = SEED.people
    const midway = await waitFor(
      async () => {
        const { current } = await readDetailsProgress(db, people)
        return current >= 60 ? current : undefined
      },
      60_000,
      'the pass under way',
    )
    expect(midway).toBeLessThan(records)
    await first.stop()
    upstream.control.setFaults({ crm: { latencyMs: 0 } })
    const { current: beforeRestart } = await readDetailsProgress(db, people)
    expect(beforeRestart).toBeLessThan(records)

    // A restart goes on with the people still due: nobody is read twice.
    const second = rig.engine(await start(upstream, url))
    await waitFor(
      async () => {
        expect(await readDetailsProgress(db, people)).toMatchObject({ records, current: records })
        return true
      },
      60_000,
      'every person read',
    )
    expect(await detailsReadBy(second)).toBe(records - beforeRestart)
    expect(await differingPeople(db, upstream)).toEqual([])

    // Silent changes to 20 people's lists; 8 of them also change (a webhook, an incremental run).
    const live = upstream.control.crm.liveIds('people')
    const changed = live.filter((_, i) => i % 16 === 3).slice(0, 20)
    for (const id of changed) upstream.control.crm.changePersonDetails(id)
    const touched = changed.filter((_, i) => i % 5 < 2)
    for (const id of touched) upstream.control.crm.update('people', id, { background: `changed ${id}` })
    expect(await differingPeople(db, upstream)).toEqual([...changed].sort((a, b) => a - b))
    await upstream.control.drainDeliveries()
    expect(
      (await requestRun(db, url, { mode: 'incremental', resources: [people.name] }, 60_000)).status,
    ).toBe('succeeded')
    const silent = changed.filter((id) => !touched.includes(id)).sort((a, b) => a - b)
    await waitFor(
      async () => {
        const differing = await differingPeople(db, upstream)
        return differing.join() === silent.join() ? true : undefined
      },
      30_000,
      'the changed people read again, the others left',
    )

    // A full run makes everyone due again: the silent changes come.
    expect((await requestRun(db, url, { mode: 'full', resources: [people.name] }, 60_000)).status).toBe(
      'succeeded',
    )
    await waitFor(
      async () => ((await differingPeople(db, upstream)).length === 0 ? true : undefined),
      60_000,
      'every person read again after the full run',
    )
    expect(await differences(db, upstream, { details: true, references: true })).toEqual([])
  }, 240_000)
})
