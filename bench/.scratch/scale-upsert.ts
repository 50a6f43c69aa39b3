import { sql } from 'kysely'
import { createUpstreamClients, createUpstreamMetrics, type RecordPage } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import { startSandbox } from '../../src/sandbox/index.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { createBenchDatabase, openServer } from '../support/database.ts'
import { engineEnv } from '../support/engines.ts'
const N = Number(process.argv[2] ?? 20000)
const server = await openServer(undefined)
const sandbox = await startSandbox({ seedSize: { people: N }, behaviour: { crmRateLimit: null } })
const database = await createBenchDatabase(server, 'exp')
const config = parseConfig(engineEnv(sandbox, 3000, { databaseUrl: database.url, env: { CRM_RATE_LIMIT: '10000' } }))
const { crm } = createUpstreamClients(config, { db: database.db, logger: createLogger({ level: 'warn' }), metrics: createUpstreamMetrics() })
const pages: RecordPage[] = []
let t = performance.now()
for await (const page of crm.pages(people)) pages.push(page)
console.log('fetch s', ((performance.now() - t) / 1000).toFixed(2))
for (const pass of [1, 2, 3]) {
  const times: number[] = []
  t = performance.now()
  for (const page of pages) {
    const t0 = performance.now()
    await upsertRecords(database.db, people, page.records, { source: 'fetch', fetchedAt: new Date() })
    times.push(performance.now() - t0)
  }
  const s = (performance.now() - t) / 1000
  const q = Math.floor(times.length / 4)
  const avg = (a: number[]) => (a.reduce((x, y) => x + y, 0) / a.length).toFixed(1)
  console.log('pass', pass, 'rate', Math.round(N / s), 'first quarter ms/page', avg(times.slice(0, q)), 'last quarter', avg(times.slice(-q)))
  if (pass === 2) { await sql`analyze`.execute(database.db); console.log('analyzed') }
}
await database.drop()
await sandbox.stop()
