// Reservation contacts and bookings: no webhooks, no usable count. Incremental sweeps bring changes,
// a contact deleted softly comes back with its own deleted_at and is tombstoned, and deletions that
// remove records are found by the full sweep's reconciliation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ReservationCollection, type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { type AnyResource, bookings, contacts, findResource } from '../../src/resources/index.ts'
import { readRun } from '../../src/store/runs.ts'
import { useTestDatabase } from '../support/database.ts'
import { deletedIds, mirrorOf, sandboxConfig, sweep, sweepDeps, truthOf } from './support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: { contacts: 60, bookings: 90, tags: 6, webforms: 4 },
    behaviour: { reservationRateLimit: null, maxPerpage: 20 },
  })
})
afterAll(async () => {
  await sandbox?.stop()
})

const resources = ['reservations.contacts', 'reservations.bookings']
const truth = (resource: AnyResource) => {
  const collection = resource.path as ReservationCollection
  return truthOf(
    sandbox.control.reservation
      .liveIds(collection)
      .map((id) => sandbox.control.reservation.get(collection, id) as { id: number }),
    resource,
  )
}

// One sandbox and database through the steps of the file, in order: each step starts from the
// mirror the previous one left, as the engine's runs do.
describe('reservation sweeps', () => {
  const deps = () => sweepDeps(database.db, sandboxConfig(sandbox))

  it('make an empty mirror equal to the sandbox (incremental)', async () => {
    const runId = await sweep(deps(), { mode: 'incremental', resources })
    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('succeeded')
    expect(run?.resources.map((swept) => swept.remote_count)).toEqual([null, null])
    expect(await mirrorOf(database.db, contacts)).toEqual(truth(contacts))
    expect(await mirrorOf(database.db, bookings)).toEqual(truth(bookings))
  })

  it('tombstone a contact that comes back with its own deleted_at (incremental)', async () => {
    sandbox.control.setBehaviour({ contactDeletion: 'soft' })
    const [soft] = sandbox.control.reservation.liveIds('contacts') as [number]
    sandbox.control.reservation.destroy('contacts', soft)
    const runId = await sweep(deps(), { mode: 'incremental', resources: ['reservations.contacts'] })
    // Page 1 holds the change and older contacts, page 2 only older ones: the walk stops there.
    expect((await readRun(database.db, runId))?.resources[0]).toMatchObject({ status: 'succeeded', pages: 2 })
    expect(await deletedIds(database.db, contacts)).toEqual([soft])
    expect(await mirrorOf(database.db, contacts)).toEqual(truth(contacts))
  })

  it('find removed contacts and bookings by reconciliation (full)', async () => {
    sandbox.control.setBehaviour({ contactDeletion: 'remove' })
    const contactIds = sandbox.control.reservation.liveIds('contacts')
    const removed = contactIds[5] as number
    const bookingsBefore = new Set(sandbox.control.reservation.liveIds('bookings'))
    sandbox.control.reservation.destroy('contacts', removed) // its bookings go with it
    const [booking] = sandbox.control.reservation.liveIds('bookings') as [number]
    sandbox.control.reservation.destroy('bookings', booking)
    sandbox.control.reservation.update('contacts', contactIds[9] as number, { note: 'called' })
    sandbox.control.reservation.create('bookings', {
      type: 'SingleBooking',
      area_id: 14,
      contact_id: contactIds[9],
      date: '2030-01-02',
      hour: 19,
      minute: 30,
      number_guests: 4,
    })
    const goneBookings = [...bookingsBefore].filter(
      (id) => !sandbox.control.reservation.liveIds('bookings').includes(id),
    )

    const runId = await sweep(deps(), { mode: 'full', resources })
    const run = await readRun(database.db, runId)
    expect(run?.status).toBe('succeeded')
    expect(await mirrorOf(database.db, contacts)).toEqual(truth(contacts))
    expect(await mirrorOf(database.db, bookings)).toEqual(truth(bookings))
    expect(await deletedIds(database.db, contacts)).toContain(removed)
    expect(await deletedIds(database.db, bookings)).toEqual(goneBookings.sort((a, b) => a - b))
  })

  it('find a removed tag at the next incremental sweep: the one page that holds them all lacks it', async () => {
    const lists = { mode: 'incremental' as const, resources: ['reservations.tags', 'reservations.webforms'] }
    const tags = findResource('reservations.tags') as AnyResource
    await sweep(deps(), lists) // the first, a complete walk: it learns that one page holds every tag
    const [removed] = sandbox.control.reservation.liveIds('tags') as [number]
    sandbox.control.reservation.destroy('tags', removed)
    // Not due for verification (INCREMENTAL_SYNC_INTERVAL 300 here): the first page alone shows it.
    const run = await readRun(database.db, await sweep(deps(), lists))
    expect(run?.resources.map(({ resource, tombstoned }) => ({ resource, tombstoned }))).toEqual([
      { resource: 'reservations.tags', tombstoned: 1 },
      { resource: 'reservations.webforms', tombstoned: 0 },
    ])
    expect(await deletedIds(database.db, tags)).toEqual([removed])
    expect(await mirrorOf(database.db, tags)).toEqual(truth(tags))
    // Nothing missing: one page each, and no walk behind it.
    const idle = await readRun(database.db, await sweep(deps(), lists))
    expect(idle?.resources.map(({ pages, api_requests }) => ({ pages, api_requests }))).toEqual([
      { pages: 1, api_requests: 1 },
      { pages: 1, api_requests: 1 },
    ])
  })
})
