// The runs: the history, newest first (mode, who asked, duration, records, requests, outcome), and one
// run with a row per table; an unfinished run can be cancelled from either.
import { html } from 'hono/html'
import type { runJson } from '../../status/run-history.ts'
import { type Frame, type Html, layout, shownTime, stateClass } from './layout.ts'

type Run = ReturnType<typeof runJson>

const UNFINISHED = new Set(['queued', 'running'])

function duration(run: { started_at: string | null; finished_at: string | null }, now: Date): string {
  if (!run.started_at) return '–'
  const end = run.finished_at ? new Date(run.finished_at) : now
  const seconds = Math.max(0, (end.getTime() - new Date(run.started_at).getTime()) / 1000)
  const shown = seconds < 120 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`
  return run.finished_at ? shown : `${shown} so far`
}

const sum = (run: Run, field: 'records' | 'api_requests') =>
  run.resources.reduce((total, sweep) => total + (sweep[field] ?? 0), 0)

/** Succeeded runs read as on time, failed ones as errors, the others as under way. */
const outcomeClass = (status: string) =>
  stateClass(status === 'succeeded' ? 'on time' : status === 'failed' ? 'error' : 'late')

function cancelButton(base: string, run: Run): Html {
  if (!UNFINISHED.has(run.status)) return html``
  return html`<form class="inline" method="post" action="${base}/runs/${run.id}/cancel"><button type="submit">Cancel</button></form>`
}

export function runsPage(
  runs: Run[],
  options: { now: Date; nextBefore: number | null; notice?: string; frame: Frame },
): Html {
  const { now, frame } = options
  const { base } = frame
  const body = html`
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
<h2>Runs</h2>
<table id="runs">
<thead><tr><th>Run</th><th>Mode</th><th>Asked by</th><th>Created</th><th>Duration</th>
<th class="number">Records</th><th class="number">Requests</th><th>Outcome</th><th></th></tr></thead>
<tbody>
${runs.map(
  (run) => html`<tr data-run="${run.id}" data-status="${run.status}">
<td><a href="${base}/runs/${run.id}">${run.id}</a></td><td>${run.mode}</td><td>${run.requested_by}</td>
<td>${shownTime(run.created_at)}</td><td>${duration(run, now)}</td>
<td class="number">${sum(run, 'records').toLocaleString('en')}</td>
<td class="number">${sum(run, 'api_requests').toLocaleString('en')}</td>
<td><span class="${outcomeClass(run.status)}">${run.status}</span>${run.error ? html`<br><span class="error">${run.error}</span>` : ''}</td>
<td>${cancelButton(base, run)}</td>
</tr>`,
)}
</tbody>
</table>
${options.nextBefore === null ? '' : html`<p><a href="${base}/runs?before=${options.nextBefore}">Older runs</a></p>`}`
  return layout('Runs', body, { frame })
}

export function runPage(run: Run, options: { now: Date; notice?: string; frame: Frame }): Html {
  const { frame } = options
  const { base } = frame
  const body = html`
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
<h2>Run ${run.id}: ${run.mode}, asked by ${run.requested_by}</h2>
<p id="run-status" data-status="${run.status}"><span class="${outcomeClass(run.status)}">${run.status}</span>,
created ${shownTime(run.created_at)}, ${duration(run, options.now)}. ${cancelButton(base, run)}</p>
${run.error ? html`<p class="error">${run.error}</p>` : ''}
<table id="sweeps">
<thead><tr><th>Table</th><th>Status</th><th class="number">Records</th><th class="number">Pages</th>
<th class="number">Requests</th><th class="number">Reconciled</th><th class="number">Tombstoned</th>
<th>Duration</th><th>Error</th></tr></thead>
<tbody>
${run.resources.map(
  (sweep) => html`<tr data-table="${sweep.resource}" data-status="${sweep.status}">
<td>${sweep.resource}</td><td><span class="${outcomeClass(sweep.status)}">${sweep.waiting ? 'waiting' : sweep.status}</span></td>
<td class="number">${sweep.records}</td><td class="number">${sweep.pages}</td>
<td class="number">${sweep.api_requests}</td><td class="number">${sweep.reconciled}</td>
<td class="number">${sweep.tombstoned}</td><td>${duration(sweep, options.now)}</td>
<td class="error">${sweep.error ?? ''}</td>
</tr>`,
)}
</tbody>
</table>
<p><a href="${base}/runs">All runs</a></p>`
  return layout(`Run ${run.id}`, body, { frame })
}
