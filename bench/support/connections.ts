// The connections engine processes hold to a database, counted from PostgreSQL's side
// (pg_stat_activity) and told apart by process: a connection's client port is matched with the TCP
// sockets each process tree holds open (/proc/<pid>/fd and /proc/net/tcp; Linux only). The engine's
// connections are those named `crm-sync` (its pool) and `crm-sync:jobs` (pg-boss's); the benchmark's
// own (`crm-sync:bench`) are not counted.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { sql } from 'kysely'
import type { Db } from '../../src/store/database.ts'
import { processTree } from './process-tree.ts'

/**
 * The local ports of the TCP sockets the processes of the tree under `root` hold open to `remotePort`
 * (PostgreSQL's): Linux gives one local port to several connections whose remote ends differ, so a
 * port alone may be another engine's connection to PostgreSQL and this one's to an upstream.
 */
export function socketPorts(root: number, remotePort: number): Set<number> {
  const inodes = new Set<string>()
  for (const pid of processTree(root)) {
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (socket) inodes.add(socket[1] as string)
      } catch {
        // closed meanwhile
      }
    }
  }
  const ports = new Set<number>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10 || !inodes.has(fields[9] as string)) continue
      const remote = Number.parseInt((fields[2] as string).split(':').pop() as string, 16)
      if (remote !== remotePort) continue
      ports.add(Number.parseInt((fields[1] as string).split(':').pop() as string, 16))
    }
  }
  return ports
}

export interface ConnectionSampler {
  /** The most connections seen at once, per engine (in the order `roots` gave them), and of all engines. */
  peak(): {
    perEngine: number[]
    total: number
    unattributed: number
    /** The most at once of each application_name, all engines together. */
    byName: Record<string, number>
    samples: number
  }
  stop(): Promise<void>
}

/**
 * Counts the engines' connections to `database` every `intervalMs`. `roots` gives the engines' pids as
 * far as they are known (an engine starting has none yet): a connection no known engine holds counts
 * in the total and as unattributed.
 */
export function sampleConnections(
  db: Db,
  database: string,
  roots: () => readonly number[],
  intervalMs = 1000,
): ConnectionSampler {
  const perEngine: number[] = []
  let total = 0
  let unattributed = 0
  const byName: Record<string, number> = {}
  let samples = 0
  let stopped = false
  const sample = async () => {
    const { rows } = await sql<{ port: number | null; name: string; server: number }>`
      select client_port as port, application_name as name, current_setting('port')::int as server
      from pg_stat_activity
      where datname = ${database} and application_name in ('crm-sync', 'crm-sync:jobs')
    `.execute(db)
    const server = rows[0]?.server ?? 5432
    const engines = roots().map((root) => socketPorts(root, server))
    const counts = engines.map(
      (ports) => rows.filter((row) => row.port !== null && ports.has(row.port)).length,
    )
    counts.forEach((count, i) => {
      perEngine[i] = Math.max(perEngine[i] ?? 0, count)
    })
    total = Math.max(total, rows.length)
    const named = new Map<string, number>()
    for (const row of rows) named.set(row.name, (named.get(row.name) ?? 0) + 1)
    for (const [name, count] of named) byName[name] = Math.max(byName[name] ?? 0, count)
    unattributed = Math.max(unattributed, rows.length - counts.reduce((sum, count) => sum + count, 0))
    samples++
  }
  const loop = (async () => {
    while (!stopped) {
      const next = Date.now() + intervalMs
      await sample().catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())))
    }
  })()
  return {
    peak: () => ({ perEngine: [...perEngine], total, unattributed, byName: { ...byName }, samples }),
    async stop() {
      stopped = true
      await loop
    },
  }
}
