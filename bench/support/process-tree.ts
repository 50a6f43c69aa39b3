// The memory of a process and of every process below it (an engine and the embedded PostgreSQL it
// starts, say), read from /proc. RSS counts a page shared by several processes (PostgreSQL's shared
// buffers, the code of its binary) once in each of them, so the sum of the tree's RSS overstates what
// the tree takes; PSS splits every shared page between the processes that map it and adds up to the
// memory the tree really holds. Both are sampled; Linux only (NaN elsewhere).
import { readdirSync, readFileSync } from 'node:fs'

export interface TreeMemory {
  /** Milliseconds since the sampler started. */
  at: number
  /** Sum of VmRSS over the tree, bytes. */
  rss: number
  /** Sum of Pss over the tree (smaps_rollup), bytes. */
  pss: number
  /** VmRSS of the root process alone, bytes. */
  rootRss: number
  processes: number
}

/** One kind of process of the tree (the root; PostgreSQL's backends, its checkpointer, ...), summed. */
export interface ProcessKind {
  kind: string
  processes: number
  rss: number
  pss: number
  /** Of `pss`: private memory (heap, stacks), shared memory (PostgreSQL's shared buffers), file pages. */
  pssAnon: number
  pssShmem: number
  pssFile: number
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

function kilobytes(text: string | null, field: string): number {
  const match = text && new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)
  return match ? Number(match[1]) * 1024 : 0
}

/** The pid of every live process under `root` (itself included), by the parent pids of /proc. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>()
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return [root]
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readText(`/proc/${entry}/stat`)
    if (!stat) continue
    // The command name may hold spaces and parentheses: the fields after it start past the last ')'.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const list = children.get(parent) ?? []
    list.push(Number(entry))
    children.set(parent, list)
  }
  const tree: number[] = []
  const queue = [root]
  while (queue.length) {
    const pid = queue.shift() as number
    tree.push(pid)
    queue.push(...(children.get(pid) ?? []))
  }
  return tree
}

/** `postgres: postgres crm_sync 127.0.0.1(4711) idle` → `postgres: backend`; the root is `root`. */
function kindOf(pid: number, root: number): string {
  if (pid === root) return 'root'
  const command = (readText(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ').trim()
  const postgres = /^postgres: (.*)$/.exec(command)
  if (postgres) {
    const title = (postgres[1] as string).replace(/^\d+\/\w+: /, '')
    const named =
      /^(io worker|autovacuum worker|parallel worker|checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher)/.exec(
        title,
      )
    return named ? `postgres: ${named[1]}` : 'postgres: backend'
  }
  if (/\/postgres\s/.test(command)) return 'postgres: postmaster'
  return (command.split(' ')[0] ?? '').split('/').pop() || String(pid)
}

/** The tree under `root` by kind of process, largest PSS first. */
export function readTreeKinds(root: number): ProcessKind[] {
  const kinds = new Map<string, ProcessKind>()
  for (const pid of processTree(root)) {
    const status = readText(`/proc/${pid}/status`)
    if (!status) continue
    const rollup = readText(`/proc/${pid}/smaps_rollup`)
    const kind = kindOf(pid, root)
    const entry = kinds.get(kind) ?? {
      kind,
      processes: 0,
      rss: 0,
      pss: 0,
      pssAnon: 0,
      pssShmem: 0,
      pssFile: 0,
    }
    entry.processes++
    entry.rss += kilobytes(status, 'VmRSS')
    entry.pss += kilobytes(rollup, 'Pss')
    entry.pssAnon += kilobytes(rollup, 'Pss_Anon')
    entry.pssShmem += kilobytes(rollup, 'Pss_Shmem')
    entry.pssFile += kilobytes(rollup, 'Pss_File')
    kinds.set(kind, entry)
  }
  return [...kinds.values()].sort((a, b) => b.pss - a.pss)
}

/** One reading of the tree under `root`. */
export function readTreeMemory(root: number, at = 0): TreeMemory {
  let rss = 0
  let pss = 0
  let rootRss = 0
  let processes = 0
  for (const pid of processTree(root)) {
    const status = readText(`/proc/${pid}/status`)
    if (!status) continue
    const own = kilobytes(status, 'VmRSS')
    rss += own
    pss += kilobytes(readText(`/proc/${pid}/smaps_rollup`), 'Pss')
    if (pid === root) rootRss = own
    processes++
  }
  if (process.platform !== 'linux') return { at, rss: NaN, pss: NaN, rootRss: NaN, processes }
  return { at, rss, pss, rootRss, processes }
}

export interface TreeSampler {
  /** The largest sums seen so far (each maximum on its own: they need not come from one sample). */
  peak(): { rss: number; pss: number; rootRss: number; processes: number }
  /** Every sample taken, oldest first. */
  samples(): readonly TreeMemory[]
  /** The tree by kind of process when its PSS was at its largest (read once per new peak). */
  atPeak(): ProcessKind[]
  stop(): void
}

/** Samples the tree under `root` every `intervalMs` until stopped. */
export function sampleTree(root: number, intervalMs = 250): TreeSampler {
  const started = performance.now()
  const taken: TreeMemory[] = []
  const peak = { rss: 0, pss: 0, rootRss: 0, processes: 0 }
  let kinds: ProcessKind[] = []
  const sample = () => {
    const reading = readTreeMemory(root, Math.round(performance.now() - started))
    if (reading.processes === 0) return
    taken.push(reading)
    if (reading.pss > peak.pss) kinds = readTreeKinds(root)
    peak.rss = Math.max(peak.rss, reading.rss)
    peak.pss = Math.max(peak.pss, reading.pss)
    peak.rootRss = Math.max(peak.rootRss, reading.rootRss)
    peak.processes = Math.max(peak.processes, reading.processes)
  }
  sample()
  const timer = setInterval(sample, intervalMs)
  return {
    peak: () => ({ ...peak }),
    samples: () => taken,
    atPeak: () => kinds,
    stop() {
      clearInterval(timer)
      sample()
    },
  }
}
