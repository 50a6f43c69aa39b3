// Determinism: the same seed gives the same records with the same ids, so failures replay.
import { describe, expect, it } from 'vitest'
import { harness } from './helpers.ts'

describe('seeded data', () => {
  it('is the same for the same seed and differs for another', async () => {
    const read = async (seed: number) => {
      const h = await harness({ seed, seedSize: 30 })
      const pages = []
      for (const path of ['people', 'companies', 'deals', 'projects', 'tasks']) {
        pages.push((await h.crm.get(path, { perpage: 30, includes: 'all', order: 'updated_at-desc' })).body)
      }
      pages.push((await h.reservation.get('bookings', { perpage: 30 })).body)
      pages.push(h.sandbox.control.crm.create('people', { name: 'Neu' }).id)
      return pages
    }
    const first = await read(42)
    expect(first[0]).toHaveLength(30)
    expect(await read(42)).toEqual(first)
    expect(await read(43)).not.toEqual(first)
  })

  it('seeds per resource, and more on demand', async () => {
    const h = await harness({ seedSize: { people: 7, contacts: 3 } })
    expect((await h.crm.get('people/count')).body.total_entries).toBe(7)
    expect((await h.crm.get('companies/count')).body.total_entries).toBe(0)
    h.sandbox.control.seed({ count: { people: 5 } })
    expect(h.sandbox.control.crm.liveIds('people')).toHaveLength(12)
    expect(h.sandbox.control.reservation.liveIds('contacts')).toHaveLength(3)
  })

  it('generates timestamps before the clock in whole seconds, and large non-sequential ids', async () => {
    const h = await harness({ seedSize: { people: 100 } })
    const people = (await h.crm.get('people', { perpage: 100, order: 'updated_at-desc' })).body.map(
      (w: { person: { id: number; updated_at: string; created_at: string } }) => w.person,
    )
    expect(Date.parse(people[0].updated_at)).toBeLessThanOrEqual(h.clock.now())
    expect(
      people.every((p: { created_at: string; updated_at: string }) => p.created_at <= p.updated_at),
    ).toBe(true)
    const ids = people.map((p: { id: number }) => p.id).sort((a: number, b: number) => a - b)
    expect(ids[0]).toBeGreaterThan(30_000_000)
    expect(ids.some((id: number, i: number) => i > 0 && id - (ids[i - 1] as number) > 1)).toBe(true)
  })

  it('seeds 50,000 people within a few seconds', async () => {
    const started = performance.now()
    const h = await harness({ seedSize: { people: 50_000 } })
    expect(performance.now() - started).toBeLessThan(5_000)
    expect((await h.crm.get('people', { perpage: 250, page: 200 })).body).toHaveLength(250)
  })
})
