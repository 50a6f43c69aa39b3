// What `resync --wait` shows while its run goes on. In a terminal: a bar per resource, records
// fetched against the upstream's count, redrawn in place (cli-progress). Anywhere else (a CI log, a
// pipe): a plain line when a sweep changes status and, at most every few seconds, when its numbers do.
import cliProgress from 'cli-progress'
import type { RunView } from '../store/runs.ts'
import { count, duration } from './format.ts'

export type Sweep = RunView['resources'][number]

export interface ProgressStream {
  write(text: string): boolean
  isTTY?: boolean
}

export interface RunProgress {
  show(run: RunView): void
  /** A message among the progress (above the bars in a terminal). */
  note(line: string): void
  stop(): void
}

const BAR_WIDTH = 24
const LINE_INTERVAL_MS = 5000
const FINISHED = ['succeeded', 'failed']

/** How far a sweep is: a finished one is complete whatever it fetched (an incremental walk stops early). */
function fraction(sweep: Sweep): number {
  if (FINISHED.includes(sweep.status)) return 1
  if (!sweep.remote_count) return 0
  return Math.min(sweep.records / sweep.remote_count, 1)
}

export function describeSweep(sweep: Sweep): string {
  const records =
    sweep.remote_count === null
      ? `${count(sweep.records)} records`
      : `${count(sweep.records)} of ${count(sweep.remote_count)} records`
  const took =
    sweep.started_at && sweep.finished_at
      ? `, ${duration(new Date(sweep.finished_at).getTime() - new Date(sweep.started_at).getTime())}`
      : ''
  const status = sweep.waiting ? 'queued (waits for another sweep of its resource)' : sweep.status
  return `${status}, ${records}${took}${sweep.error ? `: ${sweep.error}` : ''}`
}

function bars(stream: ProgressStream): RunProgress {
  let width = 0
  const multibar = new cliProgress.MultiBar({
    stream: stream as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: false,
    gracefulExit: false, // resync handles SIGINT itself, and stops the bars first
    fps: 5,
    // A line logged above the bars moves them down: every bar must be redrawn, changed or not.
    forceRedraw: true,
    format: (_options, _params, payload: { sweep: Sweep }) => {
      const { sweep } = payload
      const done = Math.round(fraction(sweep) * BAR_WIDTH)
      const bar = '█'.repeat(done) + '░'.repeat(BAR_WIDTH - done)
      const known = FINISHED.includes(sweep.status) || sweep.remote_count !== null
      const percent = (known ? `${Math.floor(fraction(sweep) * 100)}%` : '?').padStart(4)
      return `${sweep.resource.padEnd(width)}  ${bar} ${percent}  ${describeSweep(sweep)}`
    },
  })
  const byResource = new Map<string, cliProgress.SingleBar>()
  return {
    show(run) {
      width = Math.max(width, ...run.resources.map((sweep) => sweep.resource.length))
      for (const sweep of run.resources) {
        // The bar is drawn from the payload; value and total only tell cli-progress to redraw.
        const value = Math.round(fraction(sweep) * 1000)
        const bar = byResource.get(sweep.resource)
        if (bar) bar.update(value, { sweep })
        else byResource.set(sweep.resource, multibar.create(1000, value, { sweep }))
      }
    },
    note(line) {
      multibar.log(`${line}\u001b[K\n`) // clears what a bar left on that line of the screen
    },
    stop() {
      if (!multibar.isActive) return
      multibar.update()
      multibar.stop()
    },
  }
}

function lines(stream: ProgressStream, now: () => number): RunProgress {
  const shown = new Map<string, { status: string; records: number; at: number }>()
  return {
    show(run) {
      for (const sweep of run.resources) {
        const last = shown.get(sweep.resource)
        const moved = last && last.records !== sweep.records && now() - last.at >= LINE_INTERVAL_MS
        if (last && last.status === sweep.status && !moved) continue
        shown.set(sweep.resource, { status: sweep.status, records: sweep.records, at: now() })
        stream.write(`${sweep.resource}: ${describeSweep(sweep)}\n`)
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

export function createRunProgress(stream: ProgressStream, now: () => number = Date.now): RunProgress {
  return stream.isTTY ? bars(stream) : lines(stream, now)
}
