// The summary of a finished run: its outcome, then a row per resource with what its sweep did.
import type { RunView } from '../store/runs.ts'
import { count, duration } from './format.ts'
import { formatTable } from './table.ts'

function took(from: Date | string | null, to: Date | string | null): string {
  return from && to ? duration(new Date(to).getTime() - new Date(from).getTime()) : '-'
}

export function runSummary(run: RunView): string {
  const head = `run ${run.id} (${run.mode}) ${run.status} in ${took(run.started_at ?? run.created_at, run.finished_at)}`
  const table = formatTable(
    [
      { header: 'resource' },
      { header: 'status' },
      { header: 'records', align: 'right' },
      { header: 'remote', align: 'right' },
      { header: 'pages', align: 'right' },
      { header: 'requests', align: 'right' },
      { header: 'reconciled', align: 'right' },
      { header: 'tombstoned', align: 'right' },
      { header: 'time', align: 'right' },
    ],
    run.resources.map((sweep) => [
      sweep.resource,
      sweep.status,
      count(sweep.records),
      count(sweep.remote_count),
      count(sweep.pages),
      count(sweep.api_requests),
      count(sweep.reconciled),
      count(sweep.tombstoned),
      took(sweep.started_at, sweep.finished_at),
    ]),
  )
  const errors = run.resources
    .filter((sweep) => sweep.error)
    .map((sweep) => `${sweep.resource}: ${sweep.error}`)
  return [head, '', table, ...(errors.length ? ['', ...errors] : [])].join('\n')
}
