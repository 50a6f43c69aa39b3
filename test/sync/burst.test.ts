// A burst of 1,000 updates over 100 people with lean hooks, under the real budget (50 requests per
// 10 s) and the sandbox's real rate limit: once every refresh is done, the mirror is in sync (every
// record's fields, updated_at and tags are the upstream's), and the burst has cost fewer index pages
// and shows together than one show per record: while refreshes queue up, the newest page of the index
// answers them together, and refreshes a later fetch already answered are skipped.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'

let sandbox: Sandbox
let engine: Engine
let database: TestDatabase

beforeAll(async () => {
  sandbox = await startSandbox()
  database = await createTestDatabase()
  // Incremental runs are slots aligned on the clock: a day's makes the one at start the only one here.
  engine = await startEngine(sandbox, database.url, {
    HOOK_OBJECT_TYPE: 'lean',
    INCREMENTAL_SYNC_INTERVAL: '86400',
  })
  await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 20_000, 'hooks')
  // The first incremental run (at start) must be over: its pages would answer the burst for free.
  await waitFor(
    async () => {
      const { rows } = await sql<{ open: number; done: number }>`
        select count(*) filter (where status in ('queued', 'running'))::int as open,
          count(*) filter (where status in ('succeeded', 'failed'))::int as done
        from sync.runs`.execute(database.db)
      return rows[0]?.open === 0 && (rows[0]?.done ?? 0) > 0 ? true : undefined
    },
    60_000,
    'the first incremental run',
  )
})
afterAll(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
})

const shows = () => sandbox.control.counters().crm.routes['GET /api/people/:id'] ?? 0

/** No delivery waiting in the inbox and no refresh queued, waiting for a retry or running. */
async function idle() {
  const { rows } = await sql<{ n: number }>`
    select (select count(*)::int from sync.inbox where status = 'accepted')
      + (select count(*)::int from pgboss.job where name = 'record-refresh'
         and state in ('created', 'retry', 'active')) as n`.execute(database.db)
  return rows[0]?.n === 0 ? true : undefined
}

async function firstNames(ids: number[], value: string) {
  const rows = await database.db
    .selectFrom('crm.people')
    .select('id')
    .where('id', 'in', ids)
    .where('first_name', '=', value)
    .execute()
  return rows.length
}

describe('a burst of changes', () => {
  it('1,000 updates over 100 records: in sync once refreshes end, fewer pages and shows than records', async () => {
    const ids = Array.from(
      { length: 100 },
      (_, i) => sandbox.control.crm.create('people', { name: `Person ${i}`, first_name: 'new' }).id as number,
    )
    await sandbox.control.drainDeliveries()
    await waitFor(
      async () => ((await firstNames(ids, 'new')) === 100 ? idle() : undefined),
      120_000,
      'creates',
    )

    const started = Date.now()
    const before = shows()
    const indexBefore = sandbox.control.counters().crm.routes['GET /api/people'] ?? 0
    for (let round = 0; round < 10; round++) {
      for (const id of ids) sandbox.control.crm.update('people', id, { first_name: `round ${round}` })
    }
    await sandbox.control.drainDeliveries()
    await waitFor(
      async () => ((await firstNames(ids, 'round 9')) === ids.length ? true : undefined),
      120_000,
      'the last round in the mirror',
    )
    const converged = Date.now() - started
    await waitFor(idle, 120_000, 'every refresh done')
    // nothing is left to run: the people must be in sync now, not eventually (the activities that
    // the updates wrote upstream are the sweeps' to read)
    expect(await differences(database.db, sandbox, { only: ['crm.people'] })).toEqual([])
    const spent = shows() - before
    const pages = (sandbox.control.counters().crm.routes['GET /api/people'] ?? 0) - indexBefore
    console.log(
      `burst: ${pages} index pages and ${spent} shows for 1,000 updates of 100 records (all refreshes done), converged in ${converged} ms`,
    )
    expect(pages).toBeGreaterThan(0)
    expect(pages + spent).toBeLessThan(100)
  }, 300_000)
})
