// MIRROR_RESOURCES: the engine as `npm start` runs it, mirroring two resources of the fifteen. Runs,
// hooks, the activity feed and the newest-page polls then spend the budget on those two only, and
// the tables of the others stay as they were.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { startSandbox } from '../../sandbox/index.ts'
import { bookings, people } from '../../src/resources/index.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { runEnded } from '../support/runs.ts'
import { mirrorOf, truthOf } from './support.ts'

const rig = useEngineRig()

describe('an engine that mirrors some resources only', () => {
  it('sweeps, hooks and polls those, and leaves the tables of the others alone', async () => {
    const upstream = rig.sandbox(
      await startSandbox({
        seedSize: { people: 30, deals: 20, tasks: 10, contacts: 10, bookings: 15 },
        behaviour: { crmRateLimit: null, reservationRateLimit: null },
      }),
    )
    const database = rig.database(await createTestDatabase())
    rig.engine(
      await startEngine(upstream, database.url, {
        MIRROR_RESOURCES: 'crm.people, reservations.bookings',
        CRM_RATE_LIMIT: '1000',
        RESERVATION_RATE_LIMIT: '1000',
      }),
    )
    const first = await runEnded(database.db, 1, 60_000)
    expect(first.status).toBe('succeeded')
    expect(first.resources.map((sweep) => sweep.resource).sort()).toEqual([
      'crm.people',
      'reservations.bookings',
    ])
    const { crm, reservation } = upstream.control
    await waitFor(async () => (crm.hooks().length > 0 ? true : undefined), 10_000, 'hooks registered')
    expect(new Set(crm.hooks().map((hook) => hook.model))).toEqual(new Set(['Person']))

    const rows = async (table: string) =>
      Number(
        (await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(database.db)).rows[0]
          ?.n,
      )
    const truth = {
      people: () => crm.liveIds('people').map((id) => crm.get('people', id) as { id: number }),
      bookings: () =>
        reservation.liveIds('bookings').map((id) => reservation.get('bookings', id) as { id: number }),
    }

    // A change of each kind: a person (webhook), a booking (newest-page poll), a deal and a task
    // (webhook and activity log, neither mirrored).
    const changedAt = new Date()
    const person = crm.liveIds('people')[0] as number
    crm.update('people', person, { name: 'Renamed after the first sync' })
    crm.update('deals', crm.liveIds('deals')[0] as number, { name: 'Not mirrored' })
    crm.update('tasks', crm.liveIds('tasks')[0] as number, { name: 'Not mirrored either' })
    reservation.update('bookings', reservation.liveIds('bookings')[0] as number, { note: 'polled' })
    await waitFor(
      async () => {
        const same = async (resource: typeof people | typeof bookings, collection: 'people' | 'bookings') =>
          JSON.stringify(await mirrorOf(database.db, resource)) ===
          JSON.stringify(truthOf(truth[collection](), resource))
        return (await same(people, 'people')) && (await same(bookings, 'bookings')) ? true : undefined
      },
      20_000,
      'the person and the booking in the mirror',
    )
    // The feed has read the log since the changes: what it names of the others is left to no one.
    await waitFor(
      async () => {
        const feed = await sql<{ polled_at: Date | null }>`
          select polled_at from sync.activity_feed where feed = 'crm.activities'
        `.execute(database.db)
        const polledAt = feed.rows[0]?.polled_at
        return polledAt && polledAt.getTime() > changedAt.getTime() + 1000 ? true : undefined
      },
      20_000,
      'a poll of the activity log after the changes',
    )
    for (const table of [
      'crm.deals',
      'crm.tasks',
      'crm.companies',
      'crm.activities',
      'reservations.contacts',
    ])
      expect(await rows(table), table).toBe(0)
  }, 90_000)
})
