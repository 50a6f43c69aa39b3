// pgbench as the reference for ingest: the same database, the same run, a custom script.
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

export interface PgbenchResult {
  tps: number
  latencyMs: number
  /** With a `rate`: each transaction's latency (ms), from its scheduled start (open loop). */
  latencies?: number[]
}

/**
 * Runs `statements` (one transaction per script run; `:id` is a random number) with `clients`
 * connections for `seconds`. Simple protocol: pgbench leaves `:name` alone when no such variable is
 * set, as in JSON or `::type`.
 */
export async function pgbench(
  databaseUrl: string,
  statements: string[],
  options: { clients: number; seconds: number; rate?: number },
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
        // At a fixed rate, each transaction is logged with its latency from its scheduled start.
        ...(options.rate ? ['-R', String(options.rate), '-l', '--log-prefix', join(folder, 'latency')] : []),
        databaseUrl,
      ],
      { maxBuffer: 10 * 1024 * 1024 },
    )
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)
    if (!tps) throw new Error(`pgbench printed no tps:\n${stdout}`)
    const result = { tps: Number(tps[1]), latencyMs: Number(latency?.[1] ?? Number.NaN) }
    return options.rate ? { ...result, latencies: await loggedLatencies(folder) } : result
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

/** The latencies pgbench logged (`client transaction time_us script epoch us [lag]`), in ms. */
async function loggedLatencies(folder: string): Promise<number[]> {
  const latencies: number[] = []
  for (const name of await readdir(folder)) {
    if (!name.startsWith('latency')) continue
    for (const line of (await readFile(join(folder, name), 'utf8')).split('\n')) {
      const micros = Number(line.split(' ')[2])
      if (line && Number.isFinite(micros)) latencies.push(micros / 1000)
    }
  }
  return latencies
}

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The inbox row the receiver writes for a delivery, as one SQL statement. */
export function inboxInsert(table: string, body: string): string {
  return `insert into ${table} (model, event, shape, record_id, payload, status) values ('person', 'update', 'nested', :id, ${literal(body)}::jsonb, 'accepted') returning id;`
}
