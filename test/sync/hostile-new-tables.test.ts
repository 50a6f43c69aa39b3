// The newer tables under the sandbox's hostile faults, with the engine as `npm start` runs it: random
// changes to activities (by the changes they log), custom field types, filter groups and their members,
// notes, attachments, reservation tags, webforms and the tags of contacts, made in bursts while
// incremental runs are under way, with deliveries dropped, duplicated and reordered and API calls
// answered 500 and 429. After the last change, by the end of the first incremental sweeps that start
// after it (within one incremental interval), the mirror has every change, also what only a complete
// walk shows (these lists fit on one page, which shows them whole); member sets by the end of the next
// full run at the latest.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import type { Db } from '../../src/store/database.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()

const INTERVAL_SECONDS = 10
const ADMIN_TOKEN = 'hostile-admin-token-0123456789'
const SEED = {
  people: 30,
  companies: 8,
  deals: 6,
  projects: 5,
  tasks: 10,
  custom_fields_types: 15,
  protocols: 20,
  filter_groups: 8,
  activities: 30,
  attachments: 15,
  contacts: 30,
  bookings: 10,
  tags: 15,
  webforms: 10,
}
/** The newer tables, and the contacts (their tags are reservations.contact_tags). */
const COMPARED = [
  'crm.custom_field_types',
  'crm.notes',
  'crm.activities',
  'crm.attachments',
  'crm.filter_groups',
  'reservations.contacts',
  'reservations.tags',
  'reservations.webforms',
]
const FAULTS = {
  deliveries: { dropRate: 0.15, duplicateRate: 0.05, delayRate: 0.3, delayMs: 400 },
  crm: { errorRate: 0.05, throttleRate: 0.02 },
  reservation: { errorRate: 0.05, throttleRate: 0.02 },
}

/** A small deterministic random source, so that a failure can be replayed. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

const LETTERS = ['ABC', 'DEFG', 'HIJKLM', 'NOPQRS', 'TUVWXYZ', 'AEIOU']
const NAMES = ['Adler', 'Zuse', 'Meier', 'Huber', 'Schulz', 'Ortmann']

/**
 * `count` random changes of the newer tables, and of the records whose changes the activities log;
 * adds to `made` what each was (`tags.destroy`).
 */
function randomChanges(upstream: Sandbox, count: number, next: () => number, made: Map<string, number>) {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T
  const { crm, reservation } = upstream.control
  const label = () => `${made.size}.${next().toString(36).slice(2, 7)}`
  const fewest = 3
  // Weighted changes; a deletion that would leave fewer than `fewest` records is an edit instead.
  const changes: [number, string, () => void][] = [
    [4, 'people.update', () => crm.update('people', pick(crm.liveIds('people')), { name: pick(NAMES) })],
    [2, 'people.create', () => crm.create('people', { name: pick(NAMES) })],
    [
      2,
      'tasks.update',
      () => crm.update('tasks', pick(crm.liveIds('tasks')), { name: `Aufgabe ${label()}` }),
    ],
    [
      2,
      'notes.create',
      () => crm.create('protocols', { name: `Notiz ${label()}`, person_ids: [pick(crm.liveIds('people'))] }),
    ],
    [1, 'notes.update', () => crm.update('protocols', pick(crm.liveIds('protocols')), { content: label() })],
    [1, 'notes.destroy', () => crm.destroy('protocols', pick(crm.liveIds('protocols')))],
    [
      1,
      'attachments.create',
      () =>
        crm.create('attachments', {
          data: Buffer.from(`Datei ${label()}\n`.repeat(50)).toString('base64'),
          original_filename: `datei-${label()}.txt`,
          content_type: 'text/plain',
          attachable_type: 'Person',
          attachable_id: pick(crm.liveIds('people')),
        }),
    ],
    [1, 'attachments.destroy', () => crm.destroy('attachments', pick(crm.liveIds('attachments')))],
    [
      2,
      'custom_fields_types.create',
      () => crm.create('custom_fields_types', { name: label(), category: 'Person' }),
    ],
    [
      2,
      'custom_fields_types.update',
      () => crm.update('custom_fields_types', pick(crm.liveIds('custom_fields_types')), { name: label() }),
    ],
    [
      2,
      'custom_fields_types.destroy',
      () => crm.destroy('custom_fields_types', pick(crm.liveIds('custom_fields_types'))),
    ],
    [
      2,
      'filter_groups.create',
      () => crm.create('filter_groups', { name: label(), model_type: 'Person', letters: pick(LETTERS) }),
    ],
    [
      2,
      'filter_groups.letters',
      () => crm.update('filter_groups', pick(crm.liveIds('filter_groups')), { letters: pick(LETTERS) }),
    ],
    [
      1,
      'filter_groups.update',
      () => crm.update('filter_groups', pick(crm.liveIds('filter_groups')), { name: label() }),
    ],
    [1, 'filter_groups.destroy', () => crm.destroy('filter_groups', pick(crm.liveIds('filter_groups')))],
    [2, 'tags.create', () => reservation.create('tags', { name: `Tag ${label()}` })],
    [
      2,
      'tags.update',
      () => reservation.update('tags', pick(reservation.liveIds('tags')), { name: label() }),
    ],
    [1, 'tags.destroy', () => reservation.destroy('tags', pick(reservation.liveIds('tags')))],
    [
      3,
      'contact_tags',
      () => {
        const contact = pick(reservation.liveIds('contacts'))
        const carried = ((reservation.get('contacts', contact)?.tags ?? []) as { id: number }[]).map(
          (tag) => tag.id,
        )
        const tag = pick(reservation.liveIds('tags'))
        if (carried.includes(tag)) reservation.untagContact(contact, tag)
        else reservation.tagContact(contact, tag)
      },
    ],
    [2, 'webforms.create', () => reservation.create('webforms', { name: `Formular ${label()}` })],
    [
      2,
      'webforms.update',
      () => reservation.update('webforms', pick(reservation.liveIds('webforms')), { name: label() }),
    ],
    [1, 'webforms.destroy', () => reservation.destroy('webforms', pick(reservation.liveIds('webforms')))],
  ]
  const live: Record<string, () => number> = {
    attachments: () => crm.liveIds('attachments').length,
    custom_fields_types: () => crm.liveIds('custom_fields_types').length,
    filter_groups: () => crm.liveIds('filter_groups').length,
    tags: () => reservation.liveIds('tags').length,
    webforms: () => reservation.liveIds('webforms').length,
  }
  const total = changes.reduce((sum, [weight]) => sum + weight, 0)
  for (let i = 0; i < count; i++) {
    const roll = next() * total
    let below = 0
    let chosen = changes.find(([weight]) => {
      below += weight
      return roll < below
    }) as (typeof changes)[number]
    const [collection, verb] = chosen[1].split('.') as [string, string]
    if (verb === 'destroy' && (live[collection]?.() ?? 0) <= fewest)
      chosen = changes.find(([, name]) => name === `${collection}.update`) ?? chosen
    chosen[2]()
    made.set(chosen[1], (made.get(chosen[1]) ?? 0) + 1)
  }
}

type RunRow = { id: number; mode: string; status: string; created_at: Date; finished_at: Date | null }

async function runsOf(db: Db): Promise<RunRow[]> {
  const { rows } = await sql<RunRow>`
    select id, mode, status, created_at, finished_at from sync.runs order by id`.execute(db)
  return rows
}

/** Waits for the next scheduled incremental run after run `after` to be under way; its id. */
async function nextRunUnderWay(db: Db, after: number): Promise<number> {
  return waitFor(
    async () =>
      (await runsOf(db)).find(
        (run) => run.id > after && run.mode === 'incremental' && run.status === 'running',
      )?.id,
    3 * INTERVAL_SECONDS * 1000,
    `an incremental run after run ${after}`,
  )
}

describe('the newer tables under hostile faults', () => {
  it('converge within one incremental interval after the changes stop, member sets by the next full run', async () => {
    const upstream = await startSandbox({
      seedSize: SEED,
      seed: 21,
      behaviour: { crmRateLimit: null, reservationRateLimit: null },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const engine = rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: String(INTERVAL_SECONDS),
        CRM_RATE_LIMIT: '1000',
        RESERVATION_RATE_LIMIT: '1000',
        ADMIN_TOKEN,
      }),
    )
    const all = { reservation: true, limit: 20 }
    const inSync = (members: boolean) => async () => {
      expect(await differences(db, upstream, { ...all, members })).toEqual([])
      return true
    }
    await waitFor(inSync(true), 60_000, 'the first sync')

    upstream.control.setFaults(FAULTS)
    const next = random(23)
    const made = new Map<string, number>()
    // A burst at once, and one while the next incremental run is under way.
    randomChanges(upstream, 50, next, made)
    const latest = (await runsOf(db)).at(-1)?.id ?? 0
    await nextRunUnderWay(db, latest)
    randomChanges(upstream, 50, next, made)
    // And last, one deletion of each resource whose deletions only a complete walk shows.
    const { crm, reservation } = upstream.control
    for (const collection of ['custom_fields_types', 'protocols', 'attachments', 'filter_groups'] as const)
      crm.destroy(collection, crm.liveIds(collection)[0] as number)
    for (const collection of ['tags', 'webforms'] as const)
      reservation.destroy(collection, reservation.liveIds(collection)[0] as number)
    const lastChange = new Date()
    await upstream.control.drainDeliveries()

    // Every kind of change was made.
    const kinds = ['people', 'tasks', 'notes', 'attachments', 'custom_fields_types', 'filter_groups']
    for (const kind of [...kinds, 'tags', 'contact_tags', 'webforms'])
      expect(
        [...made.keys()].some((name) => name.split('.')[0] === kind),
        kind,
      ).toBe(true)

    // Within one incremental interval, by the end of each compared resource's first sweep in an
    // incremental run started after the last change (a run leaves out a resource still being swept: then
    // its next one), every change, even what only a complete walk shows (a deletion of a resource without
    // a count route; any change of the unordered reservation tags and webforms; a contact's tags, which
    // leave its updated_at alone): each of these lists fits on one page, which shows it whole
    // (src/sync/sweep/short-list.ts).
    const sweepsAfter = (index: number) => async () => {
      const { rows } = await sql<{ resource: string; status: string; finished_at: Date | null }>`
        select s.resource, s.status, s.finished_at from sync.run_resources s join sync.runs r on r.id = s.run_id
        where r.mode = 'incremental' and r.created_at > ${lastChange} and s.resource = any(${COMPARED})
        order by s.run_id`.execute(db)
      const ended = COMPARED.map((resource) => rows.filter((row) => row.resource === resource)[index])
      if (!ended.every((sweep) => sweep?.finished_at)) return undefined
      return Math.max(...ended.map((sweep) => sweep?.finished_at?.getTime() ?? 0)) - lastChange.getTime()
    }
    const compared = { ...all, only: COMPARED, limit: 1000 }
    const first = await waitFor(
      sweepsAfter(0),
      4 * INTERVAL_SECONDS * 1000,
      'the first sweeps after the changes',
    )
    expect(await differences(db, upstream, compared)).toEqual([])
    const membersLagging = (await differences(db, upstream, { ...all, members: true, limit: 1000 })).length

    // The member sets by the next full run at the latest: one asked for through the admin API.
    const response = await fetch(`${engine.publicUrl}/admin/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'full' }),
    })
    expect(response.status).toBe(202)
    const { run_id: fullRun } = (await response.json()) as { run_id: number }
    const full = await waitFor(
      async () => (await runsOf(db)).find((row) => row.id === fullRun && row.finished_at !== null),
      60_000,
      'the full run',
    )
    expect(full.status).toBe('succeeded')
    expect(await differences(db, upstream, { ...all, members: true })).toEqual([])
    console.log(
      `hostile faults: ${[...made.values()].reduce((a, b) => a + b, 0)} changes; the first sweeps after the last one ended ${first} ms after it, in sync; member sets differing before the full run: ${membersLagging}`,
    )
  }, 120_000)
})
