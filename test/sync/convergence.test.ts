// The engine as `npm start` runs it, against the sandbox at its least helpful (a tag change leaves its
// parent's updated_at alone and fires no webhook; pages of at most 250).
//
// For every HOOK_OBJECT_TYPE: from an empty mirror the first sync converges; then under hostile faults
// (15% of deliveries dropped, 5% duplicated, delays that reorder them, 2% of API calls answered 500 and
// 2% 429) while a few hundred random changes, deletes, tag edits, changes of avatars and connections,
// status changes (silent: no updated_at, no webhook) and merges of people and companies (the losers
// vanish silently, their tasks, notes and memberships move silently) happen, it converges again after
// the changes stop with no full run, silent deletions included (tasks with their parent, reservation
// contacts with their bookings, merged losers), all but the sub-object and status changes (tags,
// avatars, connections, a deal's state) of records nothing else changed; a full run, the safety net,
// brings those. References by id (a task's attachable, a deal's people and company) are compared too.
// A full resync asked for meanwhile is accepted and succeeds.
//
// At several pages (700 people, 600 tasks and contacts, 750 bookings, pages of 250, the real budget of
// 50 requests per 10 s): incremental runs alone bring updates from every page boundary and deletions
// that only the count shows (on the last page), with their cascades; a full run brings what no
// incremental run can see: tag, avatar and connection changes on every page, deletions of resources
// without a count, and reservation contacts deleted with their bookings.
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createLogger } from '../../src/log.ts'
import type { Db } from '../../src/store/database.ts'
import { readRun } from '../../src/store/runs.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { startRun, sweepEnqueuer } from '../../src/sync/runs.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { requestRun } from '../support/runs.ts'
import { differences, type TruthOptions } from '../support/truth.ts'

const INTERVAL_SECONDS = 10

const rig = useEngineRig()

/** A small deterministic random source, so that a failure can be replayed. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

/**
 * A change to the avatar or the connections of a person or company (sub-objects: by default the
 * sandbox neither bumps the record's updated_at nor sends a webhook for them).
 */
function avatarOrConnectionChange(
  upstream: Sandbox,
  collection: 'people' | 'companies',
  id: number,
  i: number,
) {
  const { crm } = upstream.control
  const connections = (crm.get(collection, id)?.connections ?? []) as unknown[]
  const roll = i % 5
  if (roll === 0) crm.setAvatar(collection, id, { filename: `bild-${i}.jpg` })
  else if (roll === 1) crm.setAvatar(collection, id, null)
  else if (roll === 2 && i % 2 === 0)
    crm.addConnection(collection, id, { network: 'xing', url: `https://x.example/${i}` })
  else if (roll === 2) {
    const other = crm.liveIds('companies').find((companyId) => companyId !== id)
    if (other) crm.addConnection(collection, id, { to: { type: 'Company', id: other }, name: `Partner ${i}` })
  } else if (roll === 3 && connections.length > 0)
    crm.updateConnection(collection, id, 0, { name: `neu ${i}`, url: `https://x.example/n${i}` })
  else if (connections.length > 0) crm.removeConnection(collection, id, connections.length - 1)
}

const STATES = {
  deals: ['open_0', 'open_25', 'open_50', 'open_75', 'won', 'lost'],
  projects: ['ready', 'open', 'closed'],
} as const

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
    else if (i % 2 === 0) upstream.control.crm.update(collection, id, { description: `text ${i}` })
    else upstream.control.crm.changeStatus(collection, id, pick([...STATES[collection]]))
    if ((collection === 'people' || collection === 'companies') && upstream.control.crm.get(collection, id))
      avatarOrConnectionChange(upstream, collection, id, i)
    // Merges: the losers vanish silently, their tasks, notes and memberships move silently too.
    if (i % 20 === 5 || i % 20 === 15) {
      const merged = i % 20 === 5 ? 'people' : 'companies'
      const live = upstream.control.crm.liveIds(merged)
      const winner = pick(live)
      const losers = [pick(live), pick(live)].slice(0, merged === 'people' ? 2 : 1)
      const distinct = [...new Set(losers)].filter((loser) => loser !== winner)
      if (distinct.length > 0) upstream.control.crm.merge(merged, winner, distinct)
    }
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

/** A probe for waitFor: throws the differences (but those `except` matches) until there are none. */
const inSync =
  (db: Db, upstream: Sandbox, options: TruthOptions & { except?: RegExp } = {}) =>
  async () => {
    const { except, ...truth } = options
    const found = await differences(db, upstream, {
      reservation: true,
      ...truth,
      ...(except ? { limit: 100_000 } : {}),
    })
    expect(except ? found.filter((line) => !except.test(line)).slice(0, 10) : found).toEqual([])
    return true
  }

/**
 * A difference in a record's sub-objects (`crm.people 42: tags "a" != "a,b"`): the upstream shows no
 * sign of such a change, short of a full walk.
 */
const SUB_OBJECTS = /^\S+ \d+: \w+ ".*" != ".*"$/s

/** A status change: by default it leaves `updated_at` alone and sends nothing, as a tag change does. */
const STATUS = /^crm\.(deals|projects) \d+: current_state differs$/
/** What only a full run is sure to show: sub-object changes and status changes. */
const SILENT = new RegExp(`${SUB_OBJECTS.source}|${STATUS.source}`, 's')

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
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database

    let started = Date.now()
    rig.engine(
      await startEngine(upstream, database.url, {
        HOOK_OBJECT_TYPE: objectType,
        INCREMENTAL_SYNC_INTERVAL: String(INTERVAL_SECONDS),
        RESERVATION_RATE_LIMIT: '1000',
        CRM_RATE_LIMIT: '1000',
      }),
    )
    await waitFor(inSync(db, upstream), 60_000, 'the first sync')
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
    // Deliveries and incremental sweeps bring everything but sub-object and status changes (tags, a
    // deal's state) of records nothing else changed.
    await waitFor(
      inSync(db, upstream, { except: SILENT, references: true }),
      90_000,
      'convergence after the changes',
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
    // The safety net: a full run of the resources with sub-objects brings the rest.
    const unseen = (await differences(db, upstream, { limit: 100_000, references: true })).length
    const full = await requestRun(
      db,
      database.url,
      { mode: 'full', resources: ['crm.people', 'crm.companies', 'crm.deals', 'crm.projects'] },
      60_000,
    )
    expect(full.status).toBe('succeeded')
    await waitFor(inSync(db, upstream, { references: true }), 30_000, 'convergence after the full run')
    console.log(
      `${objectType}: first sync ${first.ms} ms, ${first.requests} requests; after 300 changes under faults ${after.ms} ms, ${after.requests} requests; ${unseen} sub-object differences left for the full run`,
    )
  }, 240_000)
})

const SEVERAL_PAGES = {
  people: 700,
  companies: 260,
  deals: 40,
  projects: 20,
  tasks: 600,
  contacts: 600,
  bookings: 750,
}

/** The sandbox's defaults (the real budget, pages of 250), and an engine that runs no schedule after start. */
async function startAtSeveralPages() {
  const upstream = await startSandbox({ seedSize: SEVERAL_PAGES, seed: 7 })
  rig.sandbox(upstream)
  const database = rig.database(await createTestDatabase())
  // Incremental runs are slots aligned on the clock: a day's makes the one at start the only one.
  // No activity feed: what these tests change silently, only the sweeps are to find.
  rig.engine(
    await startEngine(upstream, database.url, {
      HOOK_OBJECT_TYPE: 'nested',
      INCREMENTAL_SYNC_INTERVAL: '86400',
      ACTIVITY_POLL_SECONDS: '0',
    }),
  )
  await waitFor(inSync(database.db, upstream), 20_000, 'the first sync')
  return { upstream, db: database.db, url: database.url }
}

function logBudget(what: string, upstream: Sandbox) {
  const { crm, reservation } = upstream.control.counters()
  console.log(
    `${what}: ${crm.requests} CRM requests (${crm.rateLimited} answered 429), ${reservation.requests} reservation requests (${reservation.rateLimited} answered 429)`,
  )
}

/** Live ids as the index lists them with `updated_at-desc`: newest first, ties by id. */
function newestFirst(upstream: Sandbox, collection: 'people' | 'companies' | 'tasks'): number[] {
  return upstream.control.crm
    .liveIds(collection)
    .map((id) => ({ id, at: Date.parse(String(upstream.control.crm.get(collection, id)?.updated_at)) }))
    .sort((a, b) => b.at - a.at || a.id - b.id)
    .map((record) => record.id)
}

/** Positions either side of each boundary between pages of 250, and the last record. */
const boundaries = (ids: number[]) =>
  [0, 249, 250, 499, 500, ids.length - 1].filter((i) => i < ids.length).map((i) => ids[i] as number)

describe('at several pages, the least helpful upstream', () => {
  it('incremental runs bring updates at page boundaries and deletions only the count shows, with cascades', async () => {
    const { upstream, db, url } = await startAtSeveralPages()
    const crm = upstream.control.crm
    // Every change silent: only sweeps see them.
    upstream.control.setFaults({ deliveries: { dropRate: 1 } })
    const order = newestFirst(upstream, 'people')
    for (const id of boundaries(order).slice(0, -1)) crm.update('people', id, { name: `moved ${id}` })
    // On the last page: the oldest person, and one with tasks (they go with it, silently).
    const lastPage = order.slice(500)
    const withTasks = crm
      .liveIds('tasks')
      .map((id) => crm.get('tasks', id))
      .find((task) => task?.attachable_type === 'Person' && lastPage.includes(Number(task.attachable_id)))
    expect(withTasks, 'a person with tasks on the last page').toBeDefined()
    const doomed = [...new Set([order[order.length - 1] as number, Number(withTasks?.attachable_id)])]
    for (const id of doomed) crm.destroy('people', id)
    expect(crm.deletedIds('tasks').length, 'tasks deleted with their person').toBeGreaterThan(0)

    const run = await requestRun(db, url, { mode: 'incremental' }, 20_000)
    expect(run.status).toBe('succeeded')
    // The count disagreed with the live rows: the walk went on to the last page and reconciled.
    expect(run.resources.find((resource) => resource.resource === 'crm.people')).toMatchObject({
      status: 'succeeded',
      pages: 3,
      remote_count: 700 - doomed.length,
    })
    // The tasks follow their tombstoned person as its dependants.
    await waitFor(inSync(db, upstream), 15_000, 'the cascades')
    logBudget('incremental at several pages', upstream)
  }, 60_000)

  it('a full run brings tag changes on every page, deletions without a count, and reservation cascades', async () => {
    const { upstream, db, url } = await startAtSeveralPages()
    const { crm, reservation } = upstream.control
    for (const id of boundaries(newestFirst(upstream, 'people'))) crm.addTag('people', id, 'page-boundary')
    for (const id of boundaries(newestFirst(upstream, 'companies')))
      crm.addTag('companies', id, 'page-boundary')
    const tagged = newestFirst(upstream, 'people')
      .slice(500)
      .find((id) => ((crm.get('people', id)?.tags ?? []) as unknown[]).length > 0)
    const tag = (crm.get('people', tagged as number)?.tags as { id: number }[] | undefined)?.[0]
    if (tagged && tag) crm.removeTag('people', tagged, tag.id)
    // Avatars and connections, the same: a new avatar or none, a connection added or removed.
    for (const collection of ['people', 'companies'] as const) {
      for (const [index, id] of boundaries(newestFirst(upstream, collection)).entries()) {
        const connections = (crm.get(collection, id)?.connections ?? []) as unknown[]
        if (index % 2 === 0) crm.setAvatar(collection, id, { filename: `grenze-${id}.png` })
        else crm.setAvatar(collection, id, null)
        if (connections.length > 0) crm.removeConnection(collection, id, 0)
        else crm.addConnection(collection, id, { network: 'linkedin', url: `https://l.example/${id}` })
      }
    }
    // Tasks have no webhook nor count; reservation records neither.
    for (const id of boundaries(newestFirst(upstream, 'tasks'))) crm.destroy('tasks', id)
    const contacts = reservation.liveIds('contacts')
    const bookings = reservation.liveIds('bookings')
    const contactsWithBookings = new Set(
      bookings.map((id) => Number(reservation.get('bookings', id)?.contact_id)),
    )
    const doomedContacts = [contacts[0], contacts[300], contacts[599]].filter(
      (id): id is number => id !== undefined && contactsWithBookings.has(id),
    )
    expect(doomedContacts.length, 'contacts with bookings on several pages').toBeGreaterThan(0)
    for (const id of doomedContacts) reservation.destroy('contacts', id)
    for (const id of [bookings[1], bookings[500], bookings[749]])
      if (id !== undefined && reservation.get('bookings', id)) reservation.destroy('bookings', id)
    // Nothing else will tell: no delivery came, and no run is scheduled.
    await upstream.control.drainDeliveries()
    expect((await differences(db, upstream, { reservation: true })).length).toBeGreaterThan(0)

    const run = await requestRun(db, url, { mode: 'full' }, 20_000)
    expect(run.status).toBe('succeeded')
    await waitFor(inSync(db, upstream), 15_000, 'convergence after the full run')
    logBudget('full at several pages', upstream)
  }, 60_000)
})
