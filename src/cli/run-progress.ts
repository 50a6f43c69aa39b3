// What `resync --wait` shows while its run goes on. In a terminal: a bar per resource, records
// fetched against the upstream's count, redrawn in place (cli-progress), with the log lines and notes
// written meanwhile above the bars. Anywhere else (a CI log, a pipe): a plain line when a sweep changes
// status and, at most every few seconds, when its numbers do. A failed sweep is drawn as failed (how far
// it got, and why), and a sweep held by its upstream's rate limit says so (rate-limit.ts).
import cliProgress from 'cli-progress'
import type { RunView } from '../store/runs.ts'
import { count, duration } from './format.ts'
import type { LogOutput } from './terminal-log.ts'

export type Sweep = RunView['resources'][number]

/** Resources whose sweep waits for something other than its work, and what: `waiting for the CRM's rate limit`. */
export type SweepWaits = ReadonlyMap<string, string>

export interface ProgressStream {
  write(text: string): boolean
  isTTY?: boolean
  columns?: number
}

export interface RunProgress {
  show(run: RunView, waits?: SweepWaits): void
  /** A message among the progress (above the bars in a terminal). */
  note(line: string): void
  stop(): void
}

const BAR_WIDTH = 24
const LINE_INTERVAL_MS = 5000

/** How far a sweep is: a succeeded one is complete whatever it fetched (an incremental walk stops early). */
function fraction(sweep: Sweep): number {
  if (sweep.status === 'succeeded') return 1
  if (!sweep.remote_count) return 0
  return Math.min(sweep.records / sweep.remote_count, 1)
}

const plural = (n: number, word: string) => `${count(n)} ${word}${n === 1 ? '' : 's'}`

export function describeSweep(sweep: Sweep, wait?: string): string {
  const records =
    sweep.remote_count === null
      ? plural(sweep.records, 'record')
      : `${count(sweep.records)} of ${count(sweep.remote_count)} records`
  const took =
    sweep.started_at && sweep.finished_at
      ? `, ${duration(new Date(sweep.finished_at).getTime() - new Date(sweep.started_at).getTime())}`
      : ''
  const error = sweep.error ? `: ${sweep.error.replace(/\s+/g, ' ')}` : ''
  if (sweep.status === 'failed') {
    const after = sweep.pages > 0 ? `after ${plural(sweep.pages, 'page')}` : 'before its first page'
    return `failed ${after}, ${records}${took}${error}`
  }
  const status = sweep.waiting ? 'queued (waits for another sweep of its resource)' : sweep.status
  return `${status}, ${records}${took}${wait ? `, ${wait}` : ''}${error}`
}

function bars(stream: ProgressStream, logs: LogOutput | undefined): RunProgress {
  let width = 0
  const multibar = new cliProgress.MultiBar({
    stream: stream as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: false,
    gracefulExit: false, // resync handles SIGINT itself, and stops the bars first
    fps: 5,
    // A line logged above the bars moves them down: every bar must be redrawn, changed or not.
    forceRedraw: true,
    format: (_options, _params, payload: { sweep: Sweep; wait?: string }) => {
      const { sweep, wait } = payload
      const done = Math.round(fraction(sweep) * BAR_WIDTH)
      const bar = '█'.repeat(done) + '░'.repeat(BAR_WIDTH - done)
      const known = sweep.status === 'succeeded' || sweep.remote_count !== null
      const percent = sweep.status === 'failed' ? '✗' : known ? `${Math.floor(fraction(sweep) * 100)}%` : '?'
      return `${sweep.resource.padEnd(width)}  ${bar} ${percent.padStart(4)}  ${describeSweep(sweep, wait)}`
    },
  })
  // While the bars are drawn, line wrapping is off: a long line is cut here into lines of the width.
  const log = (text: string) => {
    const columns = stream.columns || 80
    for (const line of text.replace(/\n$/, '').split('\n')) {
      for (let at = 0; at === 0 || at < line.length; at += columns) {
        const piece = line.slice(at, at + columns)
        // Above the bars once they are drawn; `\x1b[K` clears what a bar left on that line of the screen.
        if (multibar.isActive) multibar.log(`${piece}\u001b[K\n`)
        else stream.write(`${piece}\n`)
      }
    }
  }
  const restoreLogs = logs?.divert(log)
  const byResource = new Map<string, cliProgress.SingleBar>()
  return {
    show(run, waits) {
      width = Math.max(width, ...run.resources.map((sweep) => sweep.resource.length))
      for (const sweep of run.resources) {
        // The bar is drawn from the payload; value and total only tell cli-progress to redraw.
        const value = Math.round(fraction(sweep) * 1000)
        const payload = { sweep, wait: waits?.get(sweep.resource) }
        const bar = byResource.get(sweep.resource)
        if (bar) bar.update(value, payload)
        else byResource.set(sweep.resource, multibar.create(1000, value, payload))
      }
    },
    note: log,
    stop() {
      restoreLogs?.()
      if (!multibar.isActive) return
      multibar.update() // writes the lines logged since the last redraw, and the bars as they end
      multibar.stop()
    },
  }
}

function lines(stream: ProgressStream, now: () => number): RunProgress {
  const shown = new Map<string, { status: string; records: number; wait?: string; at: number }>()
  return {
    show(run, waits) {
      for (const sweep of run.resources) {
        const last = shown.get(sweep.resource)
        const wait = waits?.get(sweep.resource)
        const changed = last && (last.records !== sweep.records || last.wait !== wait)
        const moved = changed && now() - last.at >= LINE_INTERVAL_MS
        if (last && last.status === sweep.status && !moved) continue
        shown.set(sweep.resource, { status: sweep.status, records: sweep.records, wait, at: now() })
        stream.write(`${sweep.resource}: ${describeSweep(sweep, wait)}\n`)
      }
    },
    note(line) {
      stream.write(`${line}\n`)
    },
    stop() {},
  }
}

/** Notes only, for --json: stdout is for the result, stderr still says what happens. */
export function notesOnly(stream: ProgressStream): RunProgress {
  return {
    show() {},
    note(line) {
      stream.write(`${line}\n`)
    },
    stop() {},
  }
}

export function createRunProgress(
  stream: ProgressStream,
  options: { now?: () => number; logs?: LogOutput } = {},
): RunProgress {
  return stream.isTTY ? bars(stream, options.logs) : lines(stream, options.now ?? Date.now)
}
