// How the inbox workers take deliveries under load (issue 30): a claim starts after the last delivery
// taken, yet misses none committed late; a worker that just applied a batch gathers the deliveries
// that arrive meanwhile into its next one, and a delivery that finds the workers idle is taken at once.
import { sql } from 'kysely'
import pg from 'pg'
import type { PgBoss } from 'pg-boss'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import type { DeliveryRow } from '../../src/store/inbox.ts'
import { createInboxDrain, startDeliveryWorker } from '../../src/sync/delivery/worker.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'
import { insertAcceptedDelivery } from '../support/inbox.ts'
import { settledWithin, waitFor } from '../support/process.ts'

const database = useTestDatabase()
const logger = createLogger({ level: 'silent' })
let boss: PgBoss

beforeAll(async () => {
  boss = await startJobQueue(database.url, logger)
})
afterAll(async () => {
  await boss?.stop({ graceful: false })
})
beforeEach(async () => {
  await sql`truncate sync.inbox, crm.people`.execute(database.db)
})

const deps = () => ({ db: database.db, boss, logger, refreshCoalesceSeconds: 5 })

/** A nested update of person `id` that carries every include (applied as it is, no refresh). */
const update = (id: number, second = 0): DeliveryRow => ({
  model: 'person',
  event: 'update',
  shape: 'nested',
  record_id: id,
  payload: JSON.stringify({
    model: 'person',
    event: 'update',
    record: {
      id,
      name: `Person ${id}`,
      updated_at: new Date(Date.UTC(2024, 0, 1, 0, 0, second)).toISOString(),
      ...Object.fromEntries(people.includes.map((key) => [key, []])),
    },
  }),
  body: null,
  reason: null,
})

async function statuses() {
  const rows = await database.db.selectFrom('sync.inbox').select(['id', 'status']).orderBy('id').execute()
  return Object.fromEntries(rows.map((row) => [row.id, row.status]))
}

/** Inserts a delivery in a transaction left open: its id is taken, its row not yet visible. */
async function uncommitted(row: DeliveryRow) {
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  await client.query('begin')
  const { rows } = await client.query<{ id: string }>(
    `insert into sync.inbox (model, event, shape, record_id, payload, status)
     values ($1, $2, $3, $4, $5, 'accepted') returning id`,
    [row.model, row.event, row.shape, row.record_id, row.payload],
  )
  return {
    id: Number(rows[0]?.id),
    async commit() {
      await client.query('commit')
      await client.end()
    },
  }
}

describe('a claim that starts after the last delivery taken', () => {
  it('takes a delivery committed after a later one was taken, once the receiver names it', async () => {
    // No claim from the beginning during the test: what takes the late delivery is its name.
    const drain = createInboxDrain(deps(), { fullClaimEveryMs: 600_000 })
    const late = await uncommitted(update(1))
    const early = await insertAcceptedDelivery(database.db, update(2))
    expect(late.id).toBeLessThan(early)
    expect(await drain.drainOnce()).toBe(1)
    await late.commit()

    // Unnamed, the late delivery lies below where the claims start.
    expect(await drain.drainOnce()).toBe(0)
    expect(await statuses()).toEqual({ [late.id]: 'accepted', [early]: 'processed' })

    drain.committed(late.id)
    expect(await drain.drainOnce()).toBe(1)
    expect(await statuses()).toEqual({ [late.id]: 'processed', [early]: 'processed' })
  })

  it('takes a delivery below its floor that nobody names with its next claim from the beginning', async () => {
    const drain = createInboxDrain(deps(), { fullClaimEveryMs: 200 })
    const late = await uncommitted(update(1))
    await insertAcceptedDelivery(database.db, update(2))
    expect(await drain.drainOnce()).toBe(1)
    await late.commit()
    // Another replica's delivery, or a retry that fell due: taken within the interval, unnamed.
    await waitFor(
      async () => ((await drain.drainOnce()) === 1 ? true : undefined),
      5_000,
      'the late delivery',
    )
    expect(Object.values(await statuses())).toEqual(['processed', 'processed'])
  })

  it('applies every delivery over many batches, each claim starting after the last', async () => {
    const drain = createInboxDrain(deps(), { batchSize: 7 })
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 10; i++) {
        const id = await insertAcceptedDelivery(database.db, update(round * 10 + i + 1, round))
        drain.committed(id)
      }
      while ((await drain.drainOnce()) > 0) {}
    }
    const values = Object.values(await statuses())
    expect(values).toHaveLength(50)
    expect(new Set(values)).toEqual(new Set(['processed']))
    const { count } = await database.db
      .selectFrom('crm.people')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow()
    expect(Number(count)).toBe(50)
  })
})

describe('a worker under a stream of deliveries', () => {
  it('applies a lone delivery at once, and gathers those that follow into one transaction', async () => {
    const worker = startDeliveryWorker(deps(), { concurrency: 1, gatherMs: 5_000, pollMs: 60_000 })
    try {
      // The worker is idle: a delivery is taken as soon as it is named.
      // (Its poll comes once a minute: only the wake can have it taken within the deadline.)
      const first = await insertAcceptedDelivery(database.db, update(1))
      worker.wake(first)
      await waitFor(() => allProcessed([first]), 5_000, 'the first')

      // It just applied a batch: the next ten, one commit each, wait for the rest of its gathering.
      const next: number[] = []
      for (let i = 2; i <= 11; i++) {
        const id = await insertAcceptedDelivery(database.db, update(i))
        next.push(id)
        worker.wake(id)
      }
      await waitFor(() => allProcessed(next), 20_000, 'the next ten')
      // Rows marked in one transaction share its now().
      const { rows } = await sql<{ n: number }>`
        select count(distinct processed_at)::int as n from sync.inbox where id = any(${next})`.execute(
        database.db,
      )
      expect(rows[0]?.n).toBe(1)
    } finally {
      await worker.stop()
    }
  })
})

describe('a worker gathering its next batch', () => {
  it('stops at once when asked', async () => {
    const worker = startDeliveryWorker(deps(), { concurrency: 1, gatherMs: 600_000, pollMs: 600_000 })
    const id = await insertAcceptedDelivery(database.db, update(1))
    worker.wake(id)
    await waitFor(() => allProcessed([id]), 5_000, 'the delivery')
    // It now waits ten minutes for its next batch; stopping ends the wait.
    expect((await settledWithin(worker.stop(), 5_000)).status).toBe('fulfilled')
  })
})

async function allProcessed(ids: number[]) {
  const current = await statuses()
  return ids.every((id) => current[id] === 'processed') ? true : undefined
}
