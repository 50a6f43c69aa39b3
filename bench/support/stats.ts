// Small statistics for the figures: percentiles, rates and the machine's CPU use.
import { readdirSync, readFileSync } from 'node:fs'

/** The p-th percentile (0–100) by nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] as number
}

export const round = (value: number, digits = 0) => {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls until `probe` returns a value, or fails after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (error) {
      lastError = error
    }
    await sleep(intervalMs)
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}`)
}

function cpuTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const fields = line.trim().split(/\s+/).slice(1).map(Number)
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
  const total = fields.reduce((sum, value) => sum + value, 0)
  return { busy: total - idle, total }
}

/** Fraction of the machine's CPU time (all cores) spent busy between start and `read()`. */
export function cpuMeter(): { read(): number } {
  if (process.platform !== 'linux') return { read: () => Number.NaN }
  const start = cpuTicks()
  return {
    read() {
      const end = cpuTicks()
      return (end.busy - start.busy) / Math.max(1, end.total - start.total)
    },
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc; NaN elsewhere. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/** Peak resident set size of a process so far (VmHWM), in bytes; NaN where /proc has none. */
export function peakRssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const match = /^VmHWM:\s+(\d+) kB/m.exec(status)
    return match ? Number(match[1]) * 1024 : Number.NaN
  } catch {
    return Number.NaN
  }
}

/**
 * CPU seconds used so far by the PostgreSQL backends connected to `database` (their process titles
 * name it), read from /proc: a local server only; NaN when none can be read.
 */
function backendCpuSeconds(database: string): Map<number, number> {
  const seconds = new Map<number, number>()
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
        if (title.startsWith('postgres:') && title.includes(` ${database} `))
          seconds.set(Number(entry), processCpuSeconds(Number(entry)))
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return seconds
}

/**
 * CPU seconds the PostgreSQL backends connected to `database` use from now to `read()` (a backend
 * that ends meanwhile takes its share with it); NaN when none can be read (a server elsewhere).
 */
export function backendCpuMeter(database: string): { read(): number } {
  const before = backendCpuSeconds(database)
  return {
    read() {
      let used = 0
      for (const [pid, total] of backendCpuSeconds(database)) used += total - (before.get(pid) ?? 0)
      return before.size || used > 0 ? used : Number.NaN
    },
  }
}
