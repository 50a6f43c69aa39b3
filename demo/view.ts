// The demo's live progress. In a terminal: a line of counters and a bar per table, rows in sync with
// the sandbox against its live records, redrawn in place; the bars drop as changes land upstream and
// climb back as webhooks and sweeps catch up. Elsewhere: the phases, and a line every few seconds.
import cliProgress from 'cli-progress'
import type { Counters } from '../sandbox/index.ts'
import type { TableTruth } from '../sandbox/mirror-truth.ts'
import { count, duration } from '../src/cli/format.ts'
import type { ProgressStream } from '../src/cli/run-progress.ts'

export interface DemoState {
  elapsedMs: number
  changesMade: number
  /** Null while following: the changes go on until Ctrl-C. */
  changesPlanned: number | null
  counters: Counters
  tables: TableTruth[]
}

export interface DemoView {
  /** A new phase of the demo, e.g. "first sync". */
  phase(text: string): void
  show(state: DemoState): void
  stop(): void
}

const BAR_WIDTH = 30
const CLEAR_TO_END = '\u001b[K'
const LINE_INTERVAL_MS = 5000

function countersLine(state: DemoState): string {
  const { counters } = state
  const requests = counters.crm.requests + counters.reservation.requests
  const planned = state.changesPlanned === null ? '' : `/${count(state.changesPlanned)}`
  return [
    `${duration(state.elapsedMs)}`,
    ...(state.changesPlanned === 0 ? [] : [`changes ${count(state.changesMade)}${planned}`]),
    `deliveries ${count(counters.deliveries.queued)} (${count(counters.deliveries.dropped)} dropped)`,
    `API requests ${count(requests)}`,
  ].join(' · ')
}

function tableLine(table: TableTruth, width: number): string {
  const share = table.upstream ? table.inSync / table.upstream : 1
  const done = Math.round(share * BAR_WIDTH)
  const stale = table.stale ? `, ${count(table.stale)} to tombstone` : ''
  return `${table.table.padEnd(width)}  ${'█'.repeat(done)}${'░'.repeat(BAR_WIDTH - done)}  ${count(table.inSync)}/${count(table.upstream)} in sync${stale}`
}

function bars(stream: ProgressStream): DemoView {
  const multibar = new cliProgress.MultiBar({
    stream: stream as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: false,
    gracefulExit: false, // the demo stops the bars itself on SIGINT
    fps: 5,
    // A line logged above the bars moves them down: every bar must be redrawn, changed or not.
    forceRedraw: true,
    format: (_options, _params, payload: { line: string }) => payload.line,
  })
  const lines = new Map<string, cliProgress.SingleBar>()
  const draw = (key: string, line: string) => {
    const bar = lines.get(key)
    if (bar) bar.update(0, { line })
    else lines.set(key, multibar.create(1, 0, { line }))
  }
  return {
    phase(text) {
      // A line that wraps would throw off the redrawing of the bars below it; one shorter than the
      // bar it replaces on screen must clear the rest of that line (ESC [K).
      const columns = (stream as { columns?: number }).columns ?? 80
      multibar.log(`${text.slice(0, columns - 1)}${CLEAR_TO_END}\n`)
    },
    show(state) {
      const width = Math.max(...state.tables.map((table) => table.table.length))
      draw('counters', countersLine(state))
      for (const table of state.tables) draw(table.table, tableLine(table, width))
    },
    stop() {
      if (!multibar.isActive) return
      multibar.update()
      multibar.stop()
    },
  }
}

function plainLines(stream: ProgressStream): DemoView {
  let shownAt = Number.NEGATIVE_INFINITY
  return {
    phase(text) {
      stream.write(`${text}\n`)
    },
    show(state) {
      if (state.elapsedMs - shownAt < LINE_INTERVAL_MS) return
      shownAt = state.elapsedMs
      const inSync = state.tables.reduce((sum, table) => sum + table.inSync, 0)
      const upstream = state.tables.reduce((sum, table) => sum + table.upstream, 0)
      stream.write(`  ${countersLine(state)} · rows in sync ${count(inSync)}/${count(upstream)}\n`)
    },
    stop() {},
  }
}

export function createDemoView(stream: ProgressStream): DemoView {
  return stream.isTTY ? bars(stream) : plainLines(stream)
}
