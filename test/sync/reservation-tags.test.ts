// Reservation tags, webforms and the tags of contacts, against the sandbox's least helpful paging of
// the indexes the document does not describe: `perpage` ignored (pages of 5 here) and a page past the
// last answered with the last one again. From empty the mirror equals the sandbox; after random changes
// (tags renamed, deleted, put on and taken off contacts) under hostile faults a full sweep brings it
// back; an index that is not paged at all, and the kinder one that pages as asked, end too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { compareMirror, describe as describeDifferences } from '../../sandbox/mirror-truth.ts'
import { reservationTags, webforms } from '../../src/resources/reservation.ts'
import { readRun } from '../../src/store/runs.ts'
import { useTestDatabase } from '../support/database.ts'
import { deletedIds, pagesOneAtATime, sandboxConfig, sweep, sweepDeps, virtualClock } from './support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({
    // 13 tags: pages of 5, 5 and 3. 10 webforms: pages of 5 and 5, then the second one again.
    seedSize: { contacts: 40, tags: 13, webforms: 10 },
    behaviour: { reservationRateLimit: null, maxPerpage: 10 },
    undocumentedPaging: { pageSize: 5 },
  })
})
afterAll(async () => {
  await sandbox?.stop()
})

const RESOURCES = ['reservations.contacts', 'reservations.tags', 'reservations.webforms']
const compared = (name: string) => RESOURCES.includes(name)

async function differences(): Promise<string[]> {
  const tables = await compareMirror(database.db, sandbox, {
    include: (resource) => compared(resource.name),
    limit: 50,
  })
  return describeDifferences(tables, 50)
}

const tagRequests = () => sandbox.control.counters().reservation.routes['GET /api/tags'] ?? 0
const webformRequests = () => sandbox.control.counters().reservation.routes['GET /api/webforms'] ?? 0

/** A small deterministic random source, so that a failure can be replayed. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

function randomChanges(count: number, seed: number) {
  const next = random(seed)
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)] as T
  const { reservation } = sandbox.control
  for (let i = 0; i < count; i++) {
    if (reservation.liveIds('tags').length < 3) reservation.create('tags', { name: `more ${i}` })
    const tags = reservation.liveIds('tags')
    const contact = pick(reservation.liveIds('contacts'))
    const roll = next()
    if (roll < 0.25) reservation.tagContact(contact, pick(tags))
    else if (roll < 0.45) {
      const carried = (reservation.get('contacts', contact)?.tags ?? []) as { id: number }[]
      if (carried[0]) reservation.untagContact(contact, carried[0].id)
    } else if (roll < 0.55) reservation.update('tags', pick(tags), { name: `renamed ${i}` })
    else if (roll < 0.62) reservation.destroy('tags', pick(tags))
    else if (roll < 0.7) reservation.create('tags', { name: `new ${i}` })
    else if (roll < 0.78)
      reservation.update('webforms', pick(reservation.liveIds('webforms')), { name: `form ${i}` })
    else if (roll < 0.84) reservation.destroy('webforms', pick(reservation.liveIds('webforms')))
    else if (roll < 0.9) reservation.create('webforms', { name: `form ${i}`, active: false })
    else if (roll < 0.95) reservation.update('contacts', contact, { note: `note ${i}` })
    else reservation.destroy('contacts', contact)
  }
}

// One sandbox and database through the steps of the file, in order: each step starts from the
// mirror the previous one left, as the engine's runs do.
describe('reservation tags, webforms and contact tags', () => {
  // One virtual clock for every step: a later step's fetches are later than an earlier step's, however
  // far the pauses of 429s moved it.
  const clock = virtualClock()
  const deps = () => sweepDeps(database.db, sandboxConfig(sandbox), { clock, wrap: pagesOneAtATime })

  it('make an empty mirror equal to the sandbox, ending where a page comes short or a third time', async () => {
    const taggedContacts = sandbox.control.reservation
      .liveIds('contacts')
      .filter((id) => ((sandbox.control.reservation.get('contacts', id)?.tags ?? []) as unknown[]).length > 0)
    expect(taggedContacts.length).toBeGreaterThan(5)
    const runId = await sweep(deps(), { mode: 'full', resources: RESOURCES })
    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('succeeded')
    expect(await differences()).toEqual([])
    const swept = new Map(run?.resources.map((row) => [row.resource, row]))
    // What each sweep saw: every record, on the pages that were not repeats.
    expect(swept.get('reservations.tags')).toMatchObject({ status: 'succeeded', records: 13, pages: 3 })
    expect(swept.get('reservations.webforms')).toMatchObject({ status: 'succeeded', records: 10, pages: 2 })
    // Asked for 250 a page, given 5: the short third page ends the tags; the webforms' third and
    // fourth requests answered the second page again (a page past the last is the last).
    expect(tagRequests()).toBe(3)
    expect(webformRequests()).toBe(4)
  })

  it('come back equal after random changes under hostile faults, with a full sweep', async () => {
    const mirrored = {
      tags: sandbox.control.reservation.liveIds('tags'),
      webforms: sandbox.control.reservation.liveIds('webforms'),
    }
    sandbox.control.setFaults({ reservation: { errorRate: 0.05, throttleRate: 0.05 } })
    randomChanges(120, 19)
    const gone = (collection: 'tags' | 'webforms') =>
      mirrored[collection].filter((id) => sandbox.control.reservation.deletedIds(collection).includes(id))
    expect(gone('tags').length).toBeGreaterThan(0)
    expect(gone('webforms').length).toBeGreaterThan(0)
    // The faults may fail a sweep after its retries: the next full run goes on from scratch.
    let left: string[] = []
    for (let attempt = 0; attempt < 5; attempt++) {
      await sweep(deps(), { mode: 'full', resources: RESOURCES })
      left = await differences()
      if (left.length === 0) break
    }
    sandbox.control.resetFaults()
    expect(left).toEqual([])
    expect(await deletedIds(database.db, reservationTags)).toEqual(expect.arrayContaining(gone('tags')))
    expect(await deletedIds(database.db, webforms)).toEqual(expect.arrayContaining(gone('webforms')))
  })

  it('see a contact untagged without a change of its updated_at only in a complete walk', async () => {
    sandbox.control.setBehaviour({ childChangesTouchParent: false })
    // The oldest tagged contact: on the last of the contacts' pages of 10, past where the walk stops.
    const [oldest] = sandbox.control.reservation
      .liveIds('contacts')
      .map(
        (id) =>
          sandbox.control.reservation.get('contacts', id) as {
            id: number
            updated_at: string
            tags: { id: number }[]
          },
      )
      .filter((contact) => contact.tags.length > 0)
      .sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at))
    const contact = oldest?.id as number
    sandbox.control.reservation.untagContact(contact, oldest?.tags[0]?.id as number)
    await sweep(deps(), { mode: 'incremental', resources: ['reservations.contacts'] })
    expect(await differences()).toEqual([expect.stringMatching(`reservations.contacts ${contact}: tags`)])
    await sweep(deps(), { mode: 'full', resources: ['reservations.contacts'] })
    expect(await differences()).toEqual([])
  })

  it('end on an index that is not paged at all, and on one that pages as asked', async () => {
    sandbox.control.reservation.create('tags', { name: 'unpaged' })
    sandbox.control.setUndocumentedPaging({ page: 'ignored' })
    let before = tagRequests()
    let runId = await sweep(deps(), { mode: 'full', resources: ['reservations.tags'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({ status: 'succeeded', pages: 1 })
    // The second and third pages are the first again: the end.
    expect(tagRequests() - before).toBe(3)
    expect(await differences()).toEqual([])

    // Pages of 10 (the sandbox's largest), as asked: the end is a short page, or an empty one.
    sandbox.control.setUndocumentedPaging({ perpage: 'honoured', page: 'honoured' })
    sandbox.control.reservation.create('tags', { name: 'paged' })
    const live = sandbox.control.reservation.liveIds('tags').length
    const pages = Math.ceil(live / 10)
    before = tagRequests()
    runId = await sweep(deps(), { mode: 'full', resources: ['reservations.tags'] })
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({ status: 'succeeded', pages })
    expect(tagRequests() - before).toBe(live % 10 === 0 || live < 10 ? pages + 1 : pages)
    expect(await differences()).toEqual([])
  })
})
