// The budget shared by all replicas on one database: two clients (two replicas) together stay within
// 50 requests in any 10 s, however their requests interleave.
import { sql } from 'kysely'
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { total } from '../../src/api-client/metrics.ts'
import { people } from '../../src/resources/index.ts'
import { prepareBudget, releaseBudgetSlot, takeBudgetSlot } from '../../src/store/budget.ts'
import { CRM_URL, crmClient, T0, useNock, useTestDatabase, virtualClock } from './harness.ts'

/** The most arrivals in any half-open window [t, t + windowMs). */
function busiestWindow(arrivals: number[], windowMs: number): number {
  const sorted = [...arrivals].sort((a, b) => a - b)
  let busiest = 0
  let start = 0
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= windowMs) start++
    busiest = Math.max(busiest, end - start + 1)
  }
  return busiest
}

describe('shared budget', () => {
  const database = useTestDatabase()
  useNock()

  it('keeps two clients on one database together within 50 requests per 10 s', async () => {
    const clock = virtualClock()
    const budgetKey = 'crm-two-replicas'
    const settings = { requests: 50, windowSeconds: 10 }
    const replicas = [
      crmClient(database.db, settings, { clock, budgetKey }),
      crmClient(database.db, settings, { clock, budgetKey }),
    ]
    const arrivals: number[] = []
    nock(CRM_URL)
      .get('/api/people/count')
      .times(120)
      .reply(() => {
        arrivals.push(clock.now())
        return [200, { total_entries: 1 }]
      })

    // 60 concurrent requests from each replica.
    await Promise.all(
      replicas.flatMap(({ client }) => Array.from({ length: 60 }, () => client.count(people))),
    )

    expect(arrivals).toHaveLength(120)
    expect(busiestWindow(arrivals, 10_000)).toBeLessThanOrEqual(50)
    // 50 at once, 50 a window later, the last 20 a window after that: no sooner than 20 s ...
    const elapsed = Math.max(...arrivals) - T0
    expect(elapsed).toBeGreaterThanOrEqual(20_000)
    // ... and not much later either: slots are released as answers arrive, not held for their whole
    // hold (window + timeout + margin = 20 s, which would make it 40 s). The slack is for releases that
    // queue behind waiters on a busy machine while the test clock moves on in 1 s steps.
    expect(elapsed).toBeLessThan(30_000)
    const throttled = replicas.map(({ metrics }) => total(metrics.throttledSeconds))
    expect(throttled.every((seconds) => seconds > 0)).toBe(true)
  })

  it('counts arrivals in any 10 s, so that the check above can fail', () => {
    // Two replicas with a budget each would send 50 + 50 at once.
    expect(busiestWindow([...Array(100).fill(T0)], 10_000)).toBe(100)
    expect(busiestWindow([T0, T0 + 9_999, T0 + 10_000, T0 + 19_999], 10_000)).toBe(2)
    expect(busiestWindow([T0 + 5_000, T0, T0 + 9_000], 10_000)).toBe(3)
  })

  it("uses PostgreSQL's clock when no test clock drives it: a full budget says how long to wait", async () => {
    const key = 'db-clock'
    await prepareBudget(database.db, key, 2)
    const hold = { holdMs: 60_000, at: null }
    const first = await takeBudgetSlot(database.db, key, hold)
    const second = await takeBudgetSlot(database.db, key, hold)
    const third = await takeBudgetSlot(database.db, key, hold)
    expect([first.granted, second.granted, third.granted]).toEqual([true, true, false])
    expect(third).toMatchObject({ granted: false })
    if (third.granted || !first.granted) throw new Error('unreachable')
    expect(third.waitMs).toBeGreaterThan(50_000)
    expect(third.waitMs).toBeLessThanOrEqual(60_000)

    // A released slot is free again one window after its answer, not at the end of its hold.
    await releaseBudgetSlot(database.db, key, first, { windowMs: 0, at: null })
    expect(await takeBudgetSlot(database.db, key, hold)).toMatchObject({ granted: true, slot: first.slot })
  })

  it('ignores a late release of a slot that was taken again since', async () => {
    const key = 'late-release'
    await prepareBudget(database.db, key, 1)
    const at = new Date(T0)
    const first = await takeBudgetSlot(database.db, key, { holdMs: 1000, at })
    // The first holder's hold ran out (its process hung); somebody else takes the slot.
    const later = new Date(T0 + 2000)
    const second = await takeBudgetSlot(database.db, key, { holdMs: 60_000, at: later })
    if (!first.granted || !second.granted) throw new Error('expected both to be granted')
    await releaseBudgetSlot(database.db, key, first, { windowMs: 0, at: later })
    expect(await takeBudgetSlot(database.db, key, { holdMs: 1000, at: later })).toMatchObject({
      granted: false,
    })
  })

  it('resizes the slots when the configured limit changes', async () => {
    const key = 'resized'
    await prepareBudget(database.db, key, 5)
    await prepareBudget(database.db, key, 3)
    const result = await sql<{ count: number }>`
      select count(*)::int as count from sync.upstream_budget_slots where upstream = ${key}
    `.execute(database.db)
    expect(result.rows[0]?.count).toBe(3)
  })
})
