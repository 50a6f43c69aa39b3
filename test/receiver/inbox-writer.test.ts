// The receiver's group commit: concurrent deliveries share inserts, each caller gets its own row's
// id, and a row the database refuses costs only its own delivery. Each test runs twice: through the
// pool in one round trip (as `start` wires the receiver), and through Kysely alone.
import net from 'node:net'
import { sql } from 'kysely'
import pg from 'pg'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createInboxWriter,
  DELIVERY_BUDGET_MS,
  InboxBusy,
  MAX_WAITING_DELIVERIES,
} from '../../src/receiver/inbox-writer.ts'
import type { DeliveryRow } from '../../src/store/inbox.ts'
import { InboxTimeout } from '../../src/store/inbox-insert.ts'
import { useTestDatabase, waitForLockWaiter } from '../support/database.ts'
import { settledWithin, waitFor } from '../support/process.ts'

const database = useTestDatabase()

beforeEach(async () => {
  await sql`truncate sync.inbox`.execute(database.db)
})

const delivery = (recordId: number, payload = JSON.stringify({ record_id: recordId })): DeliveryRow => ({
  model: 'person',
  event: 'update',
  shape: 'lean',
  record_id: recordId,
  payload,
  body: null,
  reason: null,
})

const paths = [
  { path: 'through the pool in one round trip', pool: () => database.pool },
  { path: 'through Kysely', pool: () => undefined },
]

describe.each(paths)('the inbox writer, $path', ({ pool }) => {
  it("answers each of 300 concurrent deliveries with its own row's id, in far fewer inserts", async () => {
    const write = createInboxWriter(database.db, { concurrency: 2, maxBatch: 50, pool: pool() })
    const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => write(delivery(i + 1))))
    const rows = await database.db.selectFrom('sync.inbox').select(['id', 'record_id', 'status']).execute()
    const byId = new Map(rows.map((row) => [row.id, row]))
    ids.forEach((id, i) => {
      expect(byId.get(id)).toMatchObject({ record_id: i + 1, status: 'accepted' })
    })
    expect(new Set(ids).size).toBe(300)
    // Rows of one insert share its transaction's timestamp: 300 deliveries, at most 50 an insert.
    const { rows: inserts } = await sql<{ n: number }>`
      select count(distinct received_at)::int as n from sync.inbox`.execute(database.db)
    expect(inserts[0]?.n).toBeGreaterThanOrEqual(6)
    expect(inserts[0]?.n).toBeLessThan(100)
  })

  it('writes one insert at a time by default: those that arrive while it commits share the next', async () => {
    const write = createInboxWriter(database.db, { pool: pool() })
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => write(delivery(i + 1))))
    expect(new Set(ids).size).toBe(50)
    // Rows of one insert share its transaction's timestamp: the first alone, the 49 behind it together.
    const { rows } = await sql<{ n: number }>`
      select count(distinct received_at)::int as n from sync.inbox`.execute(database.db)
    expect(rows[0]?.n).toBe(2)
  })

  it('fails only the delivery the database refuses; the others of its insert are stored', async () => {
    const write = createInboxWriter(database.db, { concurrency: 1, maxBatch: 10, pool: pool() })
    const results = await Promise.allSettled([
      write(delivery(1)),
      write(delivery(2)),
      write(delivery(3, '{"not json')),
      write(delivery(4)),
    ])
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ])
    const rows = await database.db.selectFrom('sync.inbox').select('record_id').orderBy('id').execute()
    expect(rows.map((row) => row.record_id)).toEqual([1, 2, 4])
  })
})

/** Holds `sync.inbox` locked (as a long migration or a stuck session would) until `release`. */
async function lockInbox() {
  const blocker = new pg.Client({ connectionString: database.url })
  await blocker.connect()
  await blocker.query('begin')
  await blocker.query('lock table sync.inbox in access exclusive mode')
  return async () => {
    await blocker.query('rollback')
    await blocker.end()
  }
}

/** Waits until no insert into the inbox is running in this database any more. */
async function noInsertRunning() {
  await waitFor(
    async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'
          and query like '%insert into sync.inbox%'`.execute(database.db)
      return rows[0]?.n === 0 ? true : undefined
    },
    10_000,
    'the inbox inserts to end',
  )
}

describe.each(paths)('the inbox writer on a slow database (issue 17), $path', ({ pool }) => {
  it('defaults to a 5 s budget and at most 1,000 deliveries waiting', () => {
    expect(DELIVERY_BUDGET_MS).toBe(5_000)
    expect(MAX_WAITING_DELIVERIES).toBe(1_000)
  })

  it('gives up within its budget while the inbox is locked, and stores nothing afterwards', async () => {
    const release = await lockInbox()
    try {
      const write = createInboxWriter(database.db, { budgetMs: 500, pool: pool() })
      const started = Date.now()
      const outcomes = await Promise.all([1, 2, 3].map((id) => settledWithin(write(delivery(id)), 5_000)))
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected')
        expect(outcome).toMatchObject({ reason: expect.any(InboxTimeout) })
      }
      // the budget plus the grace for an answer, with room for a slow machine
      expect(Date.now() - started).toBeLessThan(3_000)
    } finally {
      await release()
    }
    await noInsertRunning()
    expect(await inboxCount()).toBe(0)
  })

  it('refuses a delivery at once when the queue is full, and stores the ones it took', async () => {
    const release = await lockInbox()
    const write = createInboxWriter(database.db, {
      concurrency: 1,
      maxBatch: 1,
      maxWaiting: 2,
      budgetMs: 20_000,
      pool: pool(),
    })
    let taken: Promise<number>[] = []
    try {
      // one insert in flight (waiting for the lock), two queued behind it: the fourth is refused
      taken = [write(delivery(1))]
      await waitForLockWaiter(database.db, 'the first insert to wait for the lock')
      taken.push(write(delivery(2)), write(delivery(3)))
      const refused = await settledWithin(write(delivery(4)), 1_000)
      expect(refused.status).toBe('rejected')
      expect(refused).toMatchObject({ reason: expect.any(InboxBusy) })
    } finally {
      await release()
    }
    const ids = await Promise.all(taken)
    expect(new Set(ids).size).toBe(3)
    const rows = await database.db.selectFrom('sync.inbox').select('record_id').orderBy('id').execute()
    expect(rows.map((row) => row.record_id)).toEqual([1, 2, 3])
  })
})

/** A TCP proxy to PostgreSQL whose open connections can be silenced: nothing more passes either way. */
async function silentProxy(target: URL) {
  const sockets = new Set<net.Socket>()
  let silent = false
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(client).add(upstream)
    for (const socket of [client, upstream]) {
      socket.on('error', () => {})
      socket.on('close', () => sockets.delete(socket))
    }
    client.on('data', (chunk) => silent || upstream.write(chunk))
    upstream.on('data', (chunk) => silent || client.write(chunk))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    silence() {
      silent = true
      // New connections pass again: only the ones open now stay silent.
      server.removeAllListeners('connection')
      server.on('connection', (client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname)
        sockets.add(client).add(upstream)
        for (const socket of [client, upstream]) socket.on('error', () => {})
        client.pipe(upstream).pipe(client)
      })
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function inboxCount() {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from sync.inbox`.execute(database.db)
  return rows[0]?.n ?? 0
}

describe('the inbox writer through the pool', () => {
  it('stores each insert in one round trip', async () => {
    const queries: unknown[] = []
    const original = pg.Client.prototype.query
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
      this: pg.Client,
      ...args: unknown[]
    ) {
      queries.push(args[0])
      return (original as (...a: unknown[]) => unknown).apply(this, args)
    } as never)
    try {
      const write = createInboxWriter(database.db, { pool: database.pool })
      await write(delivery(1))
    } finally {
      spy.mockRestore()
    }
    expect(queries).toHaveLength(1)
    expect(await inboxCount()).toBe(1)
  })

  it('stores text that quotes, escapes and SQL in the payload as it came', async () => {
    const hostile = [
      `it's`,
      `back\\slash \\' and \\\\`,
      `'); drop table sync.inbox; --`,
      `$1 $$ dollar $$`,
      'line\nbreak\ttab',
      'émoji 🙂 and 中文',
    ]
    const write = createInboxWriter(database.db, { pool: database.pool })
    const ids = await Promise.all(
      hostile.map((text, i) => write(delivery(i + 1, JSON.stringify({ record_id: i + 1, text })))),
    )
    const rows = await database.db
      .selectFrom('sync.inbox')
      .select(['id', sql<string>`payload->>'text'`.as('text')])
      .where('id', 'in', ids)
      .execute()
    const byId = new Map(rows.map((row) => [row.id, row.text]))
    expect(ids.map((id) => byId.get(id))).toEqual(hostile)
  })

  it('drops a connection that went silent, and goes on writing through a new one', async () => {
    const proxy = await silentProxy(new URL(database.url))
    const url = new URL(database.url)
    url.host = `127.0.0.1:${proxy.port}`
    const pool = new pg.Pool({ connectionString: url.toString(), max: 1 })
    try {
      const write = createInboxWriter(database.db, { budgetMs: 300, pool })
      await write(delivery(1))
      // The connection stays open and says nothing, as one a failover or a proxy cut would.
      proxy.silence()
      const outcome = await settledWithin(write(delivery(2)), 5_000)
      expect(outcome).toMatchObject({ status: 'rejected', reason: expect.any(InboxTimeout) })
      // One insert in flight: this one waits until the silent one is given up, then gets a new connection.
      const next = await settledWithin(write(delivery(3)), 10_000)
      expect(next.status).toBe('fulfilled')
    } finally {
      await pool.end().catch(() => {})
      await proxy.close()
    }
    const rows = await database.db.selectFrom('sync.inbox').select('record_id').orderBy('id').execute()
    expect(rows.map((row) => row.record_id)).toEqual([1, 3])
  })

  it('hands its connection back usable after an insert the deadline cancelled', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 })
    try {
      const release = await lockInbox()
      try {
        const write = createInboxWriter(database.db, { budgetMs: 300, pool })
        const outcome = await settledWithin(write(delivery(1)), 5_000)
        expect(outcome).toMatchObject({ status: 'rejected', reason: expect.any(InboxTimeout) })
      } finally {
        await release()
      }
      // The pool's one connection: a transaction left open or failed would refuse this insert.
      const write = createInboxWriter(database.db, { pool })
      await write(delivery(2))
      // Nor is a transaction open (now() would be its start), nor the timeout left set.
      const { rows } = await pool.query<{ timeout: string; fresh: boolean }>(
        `select current_setting('statement_timeout') as timeout, now() = statement_timestamp() as fresh`,
      )
      expect(rows[0]).toEqual({ timeout: '0', fresh: true })
    } finally {
      await pool.end()
    }
    const rows = await database.db.selectFrom('sync.inbox').select('record_id').execute()
    expect(rows.map((row) => row.record_id)).toEqual([2])
  })
})
