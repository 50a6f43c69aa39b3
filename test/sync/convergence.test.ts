// The engine as `npm start` runs it, against the sandbox, for every HOOK_OBJECT_TYPE: from an empty
// mirror the first sync converges; then under hostile faults (15% of deliveries dropped, 5%
// duplicated, delays that reorder them, 2% of API calls answered 500 and 2% 429) while a few hundred
// random changes, deletes and tag edits happen, it converges again after the changes stop, silent
// deletions included (tasks with their parent, reservation contacts with their bookings), with no
// full run. A full resync asked for meanwhile is accepted and succeeds.
import { afterEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createLogger } from '../../src/log.ts'
import { readRun } from '../../src/store/runs.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { startRun, sweepEnqueuer } from '../../src/sync/runs.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences, type TruthOptions } from '../support/truth.ts'

const INTERVAL_SECONDS = 10
let sandbox: Sandbox | undefined
let engine: Engine | undefined
let database: TestDatabase | undefined

afterEach(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  engine = sandbox = database = undefined
})

/** A small deterministic random source, so that a failure can be replayed. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

function randomChanges(upstream: Sandbox, count: number, seed: number) {
  const next = random(seed)
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)] as T
  const collections = ['people', 'companies', 'deals', 'projects'] as const
  for (let i = 0; i < count; i++) {
    const collection = pick([...collections])
    const ids = upstream.control.crm.liveIds(collection)
    const id = pick(ids)
    const roll = next()
    if (roll < 0.45) upstream.control.crm.update(collection, id, { name: `changed ${i}` })
    else if (roll < 0.6) {
      const tags = (upstream.control.crm.get(collection, id)?.tags ?? []) as { name: string }[]
      const name = `tag-${i % 7}`
      if (!tags.some((tag) => tag.name === name)) upstream.control.crm.addTag(collection, id, name)
    } else if (roll < 0.7) {
      const tags = (upstream.control.crm.get(collection, id)?.tags ?? []) as { id: number }[]
      if (tags[0]) upstream.control.crm.removeTag(collection, id, tags[0].id)
    } else if (roll < 0.85) upstream.control.crm.destroy(collection, id)
    else if (collection === 'people') upstream.control.crm.create('people', { name: `new ${i}` })
    else if (collection === 'companies') upstream.control.crm.create('companies', { name: `new ${i}` })
    else upstream.control.crm.update(collection, id, { description: `text ${i}` })
    // Silent deletions: a task alone, a contact with its bookings, a booking alone.
    if (i % 30 === 0) upstream.control.crm.destroy('tasks', pick(upstream.control.crm.liveIds('tasks')))
    if (i % 40 === 0)
      upstream.control.reservation.destroy('contacts', pick(upstream.control.reservation.liveIds('contacts')))
    if (i % 50 === 0)
      upstream.control.reservation.destroy('bookings', pick(upstream.control.reservation.liveIds('bookings')))
  }
}

const requests = (upstream: Sandbox) =>
  upstream.control.counters().crm.requests + upstream.control.counters().reservation.requests

describe.each(['lean', 'nested', 'api', 'flat'])('HOOK_OBJECT_TYPE=%s', (objectType) => {
  it('converges from empty, and again after random changes under hostile faults', async () => {
    const upstream = await startSandbox({
      seedSize: {
        people: 120,
        companies: 40,
        deals: 40,
        projects: 20,
        tasks: 40,
        contacts: 40,
        bookings: 40,
      },
      seed: 7,
      behaviour: { crmRateLimit: null, reservationRateLimit: null },
    })
    sandbox = upstream
    database = await createTestDatabase()
    const { db } = database
    const converged = (options: TruthOptions) => async () =>
      (await differences(db, upstream, { reservation: true, ...options })).length === 0 ? true : undefined
    const report = async (what: string, options: TruthOptions = {}) =>
      `${what}:\n${(await differences(db, upstream, { reservation: true, ...options })).join('\n')}`

    let started = Date.now()
    engine = await startEngine(upstream, database.url, {
      HOOK_OBJECT_TYPE: objectType,
      INCREMENTAL_SYNC_INTERVAL: String(INTERVAL_SECONDS),
      RESERVATION_RATE_LIMIT: '1000',
      CRM_RATE_LIMIT: '1000',
    })
    await waitFor(converged({}), 60_000, 'the first sync').catch(async () =>
      expect.fail(await report('first sync')),
    )
    const first = { ms: Date.now() - started, requests: requests(upstream) }

    upstream.control.setFaults({
      deliveries: { dropRate: 0.15, duplicateRate: 0.05, delayRate: 0.3, delayMs: 400 },
      crm: { errorRate: 0.02, throttleRate: 0.02 },
    })
    const before = requests(upstream)
    randomChanges(upstream, 300, 11)
    await upstream.control.drainDeliveries()
    // An operator asks for a full resync of tasks while routine sweeps run: accepted at once.
    const boss = await startJobQueue(database.url, createLogger({ level: 'silent' }))
    const resync = await startRun(
      { db, enqueue: sweepEnqueuer(boss), reservationEnabled: true },
      { mode: 'full', requestedBy: 'test', resources: ['crm.tasks'] },
    ).finally(() => boss.stop({ graceful: false }))
    expect(resync.status).toBe('started')
    started = Date.now()
    await waitFor(converged({}), 90_000, 'convergence after the changes').catch(async () =>
      expect.fail(await report('after changes')),
    )
    const after = { ms: Date.now() - started, requests: requests(upstream) - before }
    const runId = resync.status === 'started' ? resync.runId : 0
    const run = await waitFor(
      async () => {
        const current = await readRun(db, runId)
        return current?.finished_at ? current : undefined
      },
      60_000,
      'the full resync to end',
    )
    expect(run.status).toBe('succeeded')
    console.log(
      `${objectType}: first sync ${first.ms} ms, ${first.requests} requests; after 300 changes under faults ${after.ms} ms, ${after.requests} requests`,
    )
  }, 180_000)
})
