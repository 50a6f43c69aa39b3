// A budget whose upstream limit is not published (the reservation service) narrows after a 429 that
// came while it was nearly all in use, never below its floor, and widens again without 429s; the
// CRM's published budget never narrows.
import { sql } from 'kysely'
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { total } from '../../src/api-client/metrics.ts'
import { people } from '../../src/resources/index.ts'
import {
  narrowBudget,
  pauseBudget,
  prepareBudget,
  takeBudgetSlot,
  widenBudget,
} from '../../src/store/budget.ts'
import type { Db } from '../../src/store/database.ts'
import {
  CRM_URL,
  crmClient,
  RESERVATION_URL,
  reservationClient,
  useNock,
  useTestDatabase,
} from './harness.ts'

const T = Date.parse('2025-03-03T09:00:00Z')
const at = (seconds: number) => new Date(T + seconds * 1000)

async function slots(db: Db, upstream: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.upstream_budget_slots where upstream = ${upstream}`.execute(db)
  return rows[0]?.n ?? 0
}

/** Takes `count` slots at `seconds`, held for 20 s as a request's would be. */
async function busy(db: Db, upstream: string, count: number, seconds: number) {
  for (let i = 0; i < count; i++) {
    const taken = await takeBudgetSlot(db, upstream, { holdMs: 20_000, at: at(seconds) })
    expect(taken.granted).toBe(true)
  }
}

describe('budget narrowing', () => {
  const database = useTestDatabase()
  useNock()

  it('narrows by a fifth after a 429 at the limit, once per pause, down to its floor', async () => {
    const { db } = database
    const upstream = 'narrow-at-limit'
    await prepareBudget(db, upstream, 50)
    await busy(db, upstream, 50, 0)
    expect(await narrowBudget(db, upstream, { floor: 20, at: at(0) })).toBe(40)
    // the other 429s of the same burst come while the upstream is paused
    await pauseBudget(db, upstream, { ms: 10_000, at: at(0) })
    expect(await narrowBudget(db, upstream, { floor: 20, at: at(1) })).toBeNull()
    // later 429s at the limit: 32, 25, then the floor, and no further
    const sizes: Array<number | null> = []
    for (const second of [21, 42, 63, 84]) {
      await busy(db, upstream, await slots(db, upstream), second)
      sizes.push(await narrowBudget(db, upstream, { floor: 20, at: at(second) }))
      await pauseBudget(db, upstream, { ms: 1_000, at: at(second) })
    }
    expect(sizes).toEqual([32, 25, 20, null])
    expect(await slots(db, upstream)).toBe(20)
  })

  it('does not narrow on a 429 while the budget is mostly free', async () => {
    const { db } = database
    const upstream = 'narrow-idle'
    await prepareBudget(db, upstream, 50)
    await busy(db, upstream, 10, 0)
    expect(await narrowBudget(db, upstream, { floor: 20, at: at(0) })).toBeNull()
    expect(await slots(db, upstream)).toBe(50)
  })

  it('widens by one slot at a time once 30 s passed without a 429, up to its size', async () => {
    const { db } = database
    const upstream = 'widen'
    await prepareBudget(db, upstream, 50)
    await busy(db, upstream, 50, 0)
    await narrowBudget(db, upstream, { floor: 20, at: at(0) })
    await pauseBudget(db, upstream, { ms: 10_000, at: at(0) })
    const widen = (seconds: number) =>
      widenBudget(db, upstream, { size: 50, quietMs: 30_000, at: at(seconds) })
    expect(await widen(35)).toBeNull() // the pause ended 25 s ago
    expect(await widen(41)).toBe(41)
    const sizes: number[] = []
    for (let size = await widen(42); size !== null; size = await widen(42)) sizes.push(size)
    expect(sizes).toEqual([42, 43, 44, 45, 46, 47, 48, 49, 50])
    expect(await slots(db, upstream)).toBe(50)
  })

  it('narrows the reservation budget after a 429 at its limit and counts it', async () => {
    const { client, metrics, lines, budgetKey } = reservationClient(database.db, { requests: 10 })
    nock(RESERVATION_URL).get('/api/contacts/count').times(9).reply(200, '5')
    nock(RESERVATION_URL).get('/api/contacts/count').reply(429, '', { 'Retry-After': '1' })
    nock(RESERVATION_URL).get('/api/contacts/count').reply(200, '5')
    const counts = await Promise.all(Array.from({ length: 10 }, () => client.countContacts()))
    expect(counts).toEqual(Array(10).fill(5))
    expect(total(metrics.budgetNarrowed, { upstream: 'reservation' })).toBe(1)
    expect(await slots(database.db, budgetKey as string)).toBe(8)
    expect(lines.join('\n')).toMatch(/narrowed it/)
  })

  it('never narrows the CRM budget, whose limit is published', async () => {
    const { client, metrics, budgetKey } = crmClient(database.db, { requests: 10 })
    nock(CRM_URL).get('/api/people/count').times(9).reply(200, { total_entries: 1 })
    nock(CRM_URL).get('/api/people/count').reply(429, '', { 'Retry-After': '1' })
    nock(CRM_URL).get('/api/people/count').reply(200, { total_entries: 1 })
    await Promise.all(Array.from({ length: 10 }, () => client.count(people)))
    expect(total(metrics.budgetNarrowed)).toBe(0)
    expect(await slots(database.db, budgetKey as string)).toBe(10)
  })
})
