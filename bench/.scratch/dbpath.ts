import { randomUUID } from 'node:crypto'
import { createDb, createPool } from '../../src/store/database.ts'
import { createLogger } from '../../src/log.ts'
import { insertAcceptedDelivery } from '../../src/store/inbox.ts'
import { deliveryEnqueuer, startJobQueue, QUEUES } from '../../src/sync/job-queue.ts'
import { openServer, createBenchDatabase } from '../support/database.ts'
import { personUpdates } from '../ingest.ts'
import { commandCpuSeconds, cpuMeter } from '../support/stats.ts'

const server = await openServer(undefined)
const database = await createBenchDatabase(server, 'exp')
const notify = process.argv[2] !== 'nonotify'
const logger = createLogger({ level: 'warn', pretty: false })
if (!notify) {
  const { PgBoss } = await import('pg-boss')
  const boss = new PgBoss({ connectionString: database.url, schema: 'pgboss' })
  await boss.start()
  const { name: dl, ...dlo } = QUEUES.deadLetter
  await boss.createQueue(dl, dlo)
  const { name, ...options } = QUEUES.delivery
  await boss.createQueue(name, { ...options, notify: false })
  await boss.stop({ graceful: false })
}
const pool = createPool(database.url); pool.on('error', () => {})
const db = createDb(pool)
const queue = await startJobQueue(database.url, logger)
const enqueue = deliveryEnqueuer(queue)
const next = await personUpdates(50)
let n = 0
const until = performance.now() + 5000
const cpu0 = process.cpuUsage(); const pg0 = commandCpuSeconds('postgres'); const m = cpuMeter()
const t0 = performance.now()
await Promise.all(Array.from({ length: 10 }, async () => {
  while (performance.now() < until) {
    const body = next().body
    const parsed = JSON.parse(body)
    const jobId = randomUUID()
    await db.transaction().execute(async (trx) => {
      const id = await insertAcceptedDelivery(trx, { model: 'person', event: 'update', shape: 'nested', record_id: parsed.record.id, payload: JSON.stringify(parsed), body: null, reason: null, job_id: jobId })
      await enqueue(trx, { inbox_id: id }, jobId)
    })
    n++
  }
}))
const s = (performance.now() - t0) / 1000
const c = process.cpuUsage(cpu0)
console.log('pg cpu ms/delivery', ((commandCpuSeconds('postgres') - pg0) * 1000 / n).toFixed(3), 'machine', m.read().toFixed(2)); console.log(notify ? 'notify' : 'nonotify', 'rate', Math.round(n / s), 'node cpu ms per delivery', ((c.user + c.system) / 1000 / n).toFixed(3))
await queue.stop({ graceful: false })
await db.destroy()
await database.drop()
