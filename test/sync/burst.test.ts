// A burst of 1,000 updates over 100 people with lean hooks, under the real budget (50 requests per
// 10 s) and the sandbox's real rate limit: the mirror converges and spends at most 200 shows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'

let sandbox: Sandbox
let engine: Engine
let database: TestDatabase

beforeAll(async () => {
  sandbox = await startSandbox()
  database = await createTestDatabase()
  engine = await startEngine(sandbox, database.url, { HOOK_OBJECT_TYPE: 'lean' })
  await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 20_000, 'hooks')
})
afterAll(async () => {
  await engine?.stop()
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
})

const shows = () =>
  Object.entries(sandbox.control.counters().crm.routes)
    .filter(([route]) => route === 'GET /api/people/:id')
    .reduce((sum, [, count]) => sum + count, 0)

describe('a burst of changes', () => {
  it('1,000 updates over 100 records cost at most 200 shows and converge', async () => {
    const ids = Array.from(
      { length: 100 },
      (_, i) => sandbox.control.crm.create('people', { name: `Person ${i}` }).id as number,
    )
    await sandbox.control.drainDeliveries()
    const started = Date.now()
    const before = shows()
    for (let round = 0; round < 10; round++) {
      for (const id of ids) sandbox.control.crm.update('people', id, { first_name: `round ${round}` })
    }
    await sandbox.control.drainDeliveries()
    await waitFor(
      async () => {
        const rows = await database.db
          .selectFrom('crm.people')
          .select(['id', 'first_name'])
          .where('id', 'in', ids)
          .where('first_name', '=', 'round 9')
          .execute()
        if (process.env.BURST_DEBUG) {
          const { rows: jobs } = await database.pool.query(
            "select state, count(*)::int from pgboss.job where name = 'record-refresh' group by state",
          )
          console.log(
            Date.now() - started,
            rows.length,
            shows(),
            JSON.stringify(jobs),
            JSON.stringify(sandbox.control.counters().crm.statuses),
          )
        }
        return rows.length === ids.length ? true : undefined
      },
      120_000,
      'the last round in the mirror',
    )
    const spent = shows() - before
    console.log(
      `burst: ${spent} shows for 1,000 updates of 100 records, converged in ${Date.now() - started} ms`,
    )
    expect(spent).toBeLessThanOrEqual(200)
  }, 180_000)
})
