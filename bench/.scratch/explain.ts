import { createLogger } from '../../src/log.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { openServer, createBenchDatabase, withClient } from '../support/database.ts'
const server = await openServer(undefined)
const database = await createBenchDatabase(server, 'exp')
const queue = await startJobQueue(database.url, createLogger({ level: 'warn' }))
let captured: { text: string; values: unknown[] } | undefined
await queue.send(QUEUES.delivery.name, { inbox_id: 1 }, { db: { async executeSql(text: string, values: unknown[] = []) { captured = { text, values }; return { rows: [{ id: 'x' }] } } } })
await queue.stop({ graceful: false })
const job = JSON.parse(String(captured?.values[0])).map(({ id: _, ...rest }: Record<string, unknown>) => rest)
await withClient(database.url, async (client) => {
  for (let i = 0; i < 200; i++) await client.query(captured!.text, [JSON.stringify(job)])
  await client.query('begin')
  const r = await client.query(`explain (analyze, buffers, timing) ${captured!.text}`, [JSON.stringify(job)])
  console.log(r.rows.map((row) => row['QUERY PLAN']).join('\n'))
  const t0 = performance.now()
  await client.query('commit')
  console.log('commit ms', (performance.now() - t0).toFixed(2))
  const t1 = performance.now()
  for (let i = 0; i < 200; i++) await client.query(captured!.text, [JSON.stringify(job)])
  console.log('per insert ms (autocommit, 1 client)', ((performance.now() - t1) / 200).toFixed(3))
  const t2 = performance.now()
  for (let i = 0; i < 200; i++) await client.query(`insert into sync.inbox (model, status) values ('person', 'accepted')`)
  console.log('per inbox insert ms (autocommit, 1 client)', ((performance.now() - t2) / 200).toFixed(3))
})
await database.drop()
