import { Kysely, PostgresDialect } from 'kysely'
import { createUpstreamClients, createUpstreamMetrics, type RecordPage } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { people } from '../../src/resources/index.ts'
import { startSandbox } from '../../src/sandbox/index.ts'
import { createPool } from '../../src/store/database.ts'
import { upsertRecords } from '../../src/store/records.ts'
import { createBenchDatabase, openServer } from '../support/database.ts'
import { engineEnv } from '../support/engines.ts'
const server = await openServer(undefined)
const sandbox = await startSandbox({ seedSize: { people: 1000 }, behaviour: { crmRateLimit: null } })
const database = await createBenchDatabase(server, 'exp')
const config = parseConfig(engineEnv(sandbox, 3000, { databaseUrl: database.url, env: { CRM_RATE_LIMIT: '10000' } }))
const { crm } = createUpstreamClients(config, { db: database.db, logger: createLogger({ level: 'warn' }), metrics: createUpstreamMetrics() })
const pages: RecordPage[] = []
for await (const page of crm.pages(people)) pages.push(page)
let captured: { sql: string; parameters: readonly unknown[] } | undefined
const pool = createPool(database.url)
const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }), log: (event) => { captured = event.query } })
await upsertRecords(db, people, pages[0]!.records, { source: 'fetch', fetchedAt: new Date() })
const t0 = performance.now()
await upsertRecords(db, people, pages[1]!.records, { source: 'fetch', fetchedAt: new Date() })
console.log('page upsert ms', performance.now() - t0)
const client = await pool.connect()
for (const mode of ['insert-again']) {
  await client.query('begin')
  const r = await client.query(`explain (analyze, buffers, verbose off) ${captured!.sql}`, captured!.parameters as unknown[])
  console.log(r.rows.map((row) => row['QUERY PLAN']).join('\n'))
  await client.query('rollback')
}
client.release()
await pool.end()
await database.drop()
await sandbox.stop()
