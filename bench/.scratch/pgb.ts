import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { createLogger } from '../../src/log.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { openServer, createBenchDatabase } from '../support/database.ts'
import { personUpdates } from '../ingest.ts'
import { commandCpuSeconds } from '../support/stats.ts'
const server = await openServer(undefined)
const database = await createBenchDatabase(server, 'exp')
const queue = await startJobQueue(database.url, createLogger({ level: 'warn' }))
let captured: { text: string; values: unknown[] } | undefined
await queue.send(QUEUES.delivery.name, { inbox_id: 1 }, { db: { async executeSql(text: string, values: unknown[] = []) { captured = { text, values }; return { rows: [{ id: 'x' }] } } } })
await queue.stop({ graceful: false })
const job = JSON.parse(String(captured?.values[0])).map(({ id: _, ...rest }: Record<string, unknown>) => rest)
const body = (await personUpdates(10))().body.replaceAll("'", "''")
const jobSql = (captured?.text ?? '').replace('$1', `'${JSON.stringify(job)}'`).replace(/\s+/g, ' ')
const variants: Record<string, string[]> = {
  single: [`insert into sync.inbox (model, event, shape, record_id, payload, status, job_id) values ('person', 'update', 'nested', :id, '${body}'::jsonb, 'accepted', gen_random_uuid()::text);`],
  inboxtx: ['BEGIN;', `insert into sync.inbox (model, event, shape, record_id, payload, status, job_id) values ('person', 'update', 'nested', :id, '${body}'::jsonb, 'accepted', gen_random_uuid()::text) returning id;`, 'END;'],
  jobonly: [`${jobSql};`],
  jobnonotify: [`${jobSql.replace(/WITH ins AS \((.*)\), notified AS.*$/, '$1')};`],
  receivertx: ['BEGIN;', `insert into sync.inbox (model, event, shape, record_id, payload, status, job_id) values ('person', 'update', 'nested', :id, '${body}'::jsonb, 'accepted', gen_random_uuid()::text) returning id;`, `${jobSql};`, 'END;'],
}
for (const name of (process.argv[2] ?? 'single,receivertx').split(',')) {
  await writeFile('/tmp/pgb.sql', [String.raw`\set id random(1, 1000000000)`, ...(variants[name] ?? []), ''].join('\n'))
  const pg0 = commandCpuSeconds('postgres')
  const { stdout } = await promisify(execFile)('pgbench', ['-n', '-f', '/tmp/pgb.sql', '-c', process.argv[3] ?? '32', '-j', '2', '-T', '5', database.url])
  const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1])
  console.log(name, 'tps', Math.round(tps), 'pg cpu ms/txn', ((commandCpuSeconds('postgres') - pg0) * 1000 / (tps * 5)).toFixed(3))
}
await database.drop()
