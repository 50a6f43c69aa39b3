// `crm-sync runs` for a person: a row per run, newest first, with what it did and why it failed.
import type { RunView } from '../store/runs.ts'
import { count, duration, instant } from './format.ts'
import { formatTable } from './table.ts'

// A failed run's error names every failed resource; the table shows its start, --json all of it.
const ERROR_WIDTH = 60

function shorten(text: string | null): string {
  if (!text) return ''
  const line = text.replace(/\s+/g, ' ')
  return line.length > ERROR_WIDTH ? `${line.slice(0, ERROR_WIDTH - 3)}...` : line
}

/** How long the run took, or has taken so far; `-` before it started. */
function took(run: RunView, now: number): string {
  if (!run.started_at) return '-'
  const end = run.finished_at ? new Date(run.finished_at).getTime() : now
  return duration(end - new Date(run.started_at).getTime())
}

const total = (run: RunView, field: 'records' | 'api_requests') =>
  run.resources.reduce((sum, sweep) => sum + (sweep[field] ?? 0), 0)

export function runsTable(runs: RunView[], now = Date.now()): string {
  return formatTable(
    [
      { header: 'id', align: 'right' },
      { header: 'mode' },
      { header: 'status' },
      { header: 'requested by' },
      { header: 'started' },
      { header: 'duration', align: 'right' },
      { header: 'records', align: 'right' },
      { header: 'requests', align: 'right' },
      { header: 'error' },
    ],
    runs.map((run) => [
      String(run.id),
      run.mode,
      run.status,
      run.requested_by,
      instant(run.started_at),
      took(run, now),
      count(total(run, 'records')),
      count(total(run, 'api_requests')),
      shorten(run.error),
    ]),
  )
}
