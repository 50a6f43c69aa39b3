// pgbench as the reference for ingest: the same database, the same run, a custom script.
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { createLogger } from '../../src/log.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'

export interface PgbenchResult {
  tps: number
  latencyMs: number
}

/**
 * Runs `statements` (one transaction per script run; `:id` is a random number) with `clients`
 * connections for `seconds`. Simple protocol: pgbench leaves `:name` alone when no such variable is
 * set, as in JSON or `::type`.
 */
export async function pgbench(
  databaseUrl: string,
  statements: string[],
  options: { clients: number; seconds: number },
): Promise<PgbenchResult> {
  const folder = await mkdtemp(join(tmpdir(), 'crm-sync-pgbench-'))
  const script = join(folder, 'script.sql')
  await writeFile(script, [String.raw`\set id random(1, 1000000000)`, ...statements, ''].join('\n'))
  try {
    const { stdout } = await promisify(execFile)(
      'pgbench',
      [
        '-n',
        '-f',
        script,
        '-c',
        String(options.clients),
        '-j',
        '2',
        '-T',
        String(options.seconds),
        databaseUrl,
      ],
      { maxBuffer: 10 * 1024 * 1024 },
    )
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)
    if (!tps) throw new Error(`pgbench printed no tps:\n${stdout}`)
    return { tps: Number(tps[1]), latencyMs: Number(latency?.[1] ?? Number.NaN) }
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The inbox row the receiver writes for a delivery, as one SQL statement. */
export function inboxInsert(table: string, body: string): string {
  return `insert into ${table} (model, event, shape, record_id, payload, status, job_id) values ('person', 'update', 'nested', :id, ${literal(body)}::jsonb, 'accepted', gen_random_uuid()::text) returning id;`
}

/**
 * The statement pg-boss runs to add a delivery job, as it runs it (caught on its way to the database),
 * with the job as a literal; `notify: false` leaves out its NOTIFY, to measure what that costs.
 */
export async function deliveryJobInsert(databaseUrl: string, options: { notify: boolean }): Promise<string> {
  const queue = await startJobQueue(databaseUrl, createLogger({ level: 'silent' }))
  let caught: { text: string; values: unknown[] } | undefined
  try {
    await queue.send(
      QUEUES.delivery.name,
      { inbox_id: 1 },
      {
        db: {
          async executeSql(text: string, values: unknown[] = []) {
            caught = { text, values }
            return { rows: [{ id: '00000000-0000-0000-0000-000000000000' }] }
          },
        },
      },
    )
  } finally {
    await queue.stop({ graceful: false })
  }
  if (!caught) throw new Error('pg-boss sent no statement')
  // Without an id, the statement draws one (gen_random_uuid), as it does for every job.
  const jobs = (JSON.parse(String(caught.values[0])) as Record<string, unknown>[]).map(
    ({ id: _, ...job }) => job,
  )
  let text = caught.text
    .replace('$1', literal(JSON.stringify(jobs)))
    .replace(/\s+/g, ' ')
    .trim()
  if (!options.notify) {
    const bare = /^WITH ins AS \((.*)\), notified AS .*$/.exec(text)
    if (!bare?.[1]) throw new Error('the job statement has no NOTIFY part to leave out')
    text = bare[1].trim()
  }
  return `${text};`
}
