import { sql } from 'kysely'
import { startSandbox } from '../../src/sandbox/index.ts'
import { createBenchDatabase, openServer } from '../support/database.ts'
import { spawnEngine } from '../support/engines.ts'
import { runsSettled } from '../support/mirror.ts'
import { sleep, waitFor } from '../support/stats.ts'
const type = process.argv[2] ?? 'lean'
const server = await openServer(undefined)
const sandbox = await startSandbox({ seedSize: { people: 120, companies: 40, deals: 40, projects: 20, tasks: 40, contacts: 40, bookings: 40 }, seed: 7 })
const database = await createBenchDatabase(server, 'exp')
const engine = await spawnEngine(sandbox, { databaseUrl: database.url, hooks: true, env: { HOOK_OBJECT_TYPE: type, INCREMENTAL_SYNC_INTERVAL: '86400' } })
await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 30_000)
await waitFor(async () => ((await runsSettled(database.db)) ? true : undefined), 'first', 120_000)
await sleep(10000)
const shows = () => Object.entries(sandbox.control.counters().crm.routes).filter(([r]) => /:id$/.test(r)).reduce((s, [, c]) => s + c, 0)
const ids = sandbox.control.crm.liveIds('people').slice(0, 100)
const before = shows()
const t0 = Date.now()
for (let round = 0; round < 10; round++) for (const id of ids) sandbox.control.crm.update('people', id, { first_name: `round ${round}` })
const d = sandbox.control.drainDeliveries().then(() => console.log('drained at', Date.now() - t0))
for (let i = 0; i < 60; i++) {
  const { rows } = await sql<{ state: string; n: number }>`select state::text, count(*)::int as n from pgboss.job where name = 'record-refresh' group by 1 order by 1`.execute(database.db)
  const { rows: r2 } = await sql<{ n: number }>`select count(*)::int as n from crm.people where id = any(${ids}::bigint[]) and first_name = 'round 9'`.execute(database.db)
  const { rows: r3 } = await sql<{ n: number }>`select count(*)::int as n from sync.inbox where status <> 'processed'`.execute(database.db)
  console.log(((Date.now() - t0) / 1000).toFixed(1), 'shows', shows() - before, 'round9', r2[0]?.n, 'inbox pending', r3[0]?.n, JSON.stringify(rows), JSON.stringify(sandbox.control.counters().crm.statuses))
  await sleep(1000)
}
await d
await engine.stop(); await database.drop(); await sandbox.stop()
