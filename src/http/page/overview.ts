// The overview: one row per mirrored table, the worst state first (status/table-health.ts), then the
// webhook inbox and the hooks. Every table can be swept again from here, and everything at once.
import { html } from 'hono/html'
import type { DetailsStatus, Status } from '../../status/engine-status.ts'
import { type TableHealth, tableHealth, worseFirst } from '../../status/table-health.ts'
import type { BudgetUse } from '../../store/budget.ts'
import { ago, type Frame, type Html, layout, shownTime, stateClass } from './layout.ts'

export interface OverviewFacts {
  status: Status
  /** The newest `updated_at` mirrored per table (null: none, or the table has no such column). */
  newest: Map<string, Date | null>
  intervalSeconds: number
  /** The hooks as /readyz reports them. */
  hooks: unknown
  /** Each upstream's shared request budget now. */
  budgets: BudgetUse[]
  /** Why an upstream refused the API key, by service; absent: accepted (or not asked yet). */
  refusedKeys: Map<string, string>
  now: Date
  /** A line to show once (the answer to a form). */
  notice?: string
  /** Whose page: where its links go. */
  frame: Frame
}

function resyncButton(base: string, label: string, fields: Record<string, string>): Html {
  return html`<form class="inline" method="post" action="${base}/runs">${Object.entries(fields).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  )}<button type="submit">${label}</button></form>`
}

/** The hooks' report (/readyz) as one line: its state, then what else it says. */
export function hooksLine(hooks: unknown): string {
  if (typeof hooks !== 'object' || hooks === null) return String(hooks)
  const { state, ...rest } = hooks as Record<string, unknown>
  const details = Object.entries(rest).map(
    ([name, value]) => `${name} ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`,
  )
  return [String(state ?? 'unknown'), ...details].join(', ')
}

function keyState(refused: Map<string, string>, upstream: string): Html {
  const service = upstream.split(':')[0] ?? upstream
  const why = refused.get(service)
  return why
    ? html`<span class="state state-error">refused</span> <span class="error">${why}</span>`
    : html`accepted`
}

/** One row of the details pass (a person's historic events and assistants, read per person). */
function detailsRow(details: DetailsStatus, now: Date): Html {
  const { due } = details
  const share = details.records > 0 ? Math.floor((details.current / details.records) * 100) : 100
  return html`<tr data-details="${details.resource}">
<td>${details.resource}<br><span class="muted">${details.tables.join(', ')}</span></td>
<td>${details.budget_percent > 0 ? html`at most ${details.budget_percent}% of the budget` : html`<span class="state state-late">off</span> (DETAILS_BUDGET_PERCENT=0)`}</td>
<td class="number">${details.current.toLocaleString('en')} of ${details.records.toLocaleString('en')} (${share}%)</td>
<td class="number">${due.new.toLocaleString('en')}</td><td class="number">${due.changed.toLocaleString('en')}</td>
<td class="number">${due.stale.toLocaleString('en')}</td>
<td class="number">${details.failing.toLocaleString('en')}</td>
<td>${ago(details.last_read_at, now)}</td>
</tr>`
}

export function overviewPage(facts: OverviewFacts): Html {
  const { status, newest, intervalSeconds, now } = facts
  const { base } = facts.frame
  const rows = status.resources
    .map((resource) => ({ resource, health: tableHealth(resource, now, intervalSeconds) }))
    .sort(
      (a, b) =>
        worseFirst(a.health.state, b.health.state) || a.resource.resource.localeCompare(b.resource.resource),
    )
  const counts = (state: TableHealth['state']) => rows.filter((row) => row.health.state === state).length
  const body = html`
${facts.notice ? html`<p class="notice" role="status">${facts.notice}</p>` : ''}
<h2>Tables</h2>
<p>${counts('on time')} on time, ${counts('late')} late, ${counts('error')} in error; a table is late past one
incremental interval (${intervalSeconds} s) without a successful sweep, in error past two or when its last
sweep failed. ${resyncButton(base, 'Full resync of everything', { mode: 'full' })}</p>
<table id="tables">
<thead><tr><th>Table</th><th>State</th><th class="number">Live rows</th><th class="number">Drift</th>
<th>Newest change mirrored</th><th>Last successful sweep</th><th>Last error</th><th></th></tr></thead>
<tbody>
${rows.map(
  ({ resource, health }) => html`<tr data-table="${resource.resource}" data-state="${health.state}">
<td>${resource.resource}</td>
<td><span class="${stateClass(health.state)}">${health.state}</span><br><span class="muted">${health.reason}</span></td>
<td class="number">${resource.live_rows.toLocaleString('en')}</td>
<td class="number">${resource.drift ?? '–'}</td>
<td>${shownTime(newest.get(resource.resource) ?? null)}</td>
<td>${ago(health.sweptAt, now)}${resource.active_sweep ? html`<br><span class="muted">a sweep is ${resource.active_sweep.status} (<a href="${base}/runs/${resource.active_sweep.run_id}">run ${resource.active_sweep.run_id}</a>)</span>` : ''}</td>
<td class="error">${resource.last_run?.status === 'failed' ? resource.last_run.error : ''}</td>
<td>${resyncButton(base, 'Resync', { resource: resource.resource, mode: 'incremental' })}</td>
</tr>`,
)}
</tbody>
</table>
<h2>Upstreams</h2>
<table id="upstreams">
<thead><tr><th>Budget</th><th class="number">Requests in the window now</th><th>429 pause</th><th>API key</th></tr></thead>
<tbody>
${facts.budgets.map(
  (budget) => html`<tr data-upstream="${budget.upstream}">
<td>${budget.upstream}</td><td class="number">${budget.busy} of ${budget.slots}</td>
<td>${budget.pausedUntil ? html`<span class="state state-late">paused until ${shownTime(budget.pausedUntil)}</span>` : 'none'}</td>
<td>${keyState(facts.refusedKeys, budget.upstream)}</td>
</tr>`,
)}
</tbody>
</table>
${
  status.details.length > 0
    ? html`<h2>Details</h2>
<p>Lists that no include carries, read per record by a background pass that yields to everything else; a
record is read again when it changes and after each full run; one whose read failed is tried again later.</p>
<table id="details">
<thead><tr><th>Table</th><th>Pass</th><th class="number">Read and current</th><th class="number">Never read</th>
<th class="number">Changed since</th><th class="number">Before the last full run</th><th class="number">Failing</th><th>Last read</th></tr></thead>
<tbody>${status.details.map((details) => detailsRow(details, now))}</tbody>
</table>`
    : ''
}
<h2>Webhooks</h2>
<table id="inbox">
<thead><tr><th class="number">Waiting</th><th class="number">Applied</th><th class="number">Rejected</th><th class="number">Failed</th><th>Hooks</th></tr></thead>
<tbody><tr>
<td class="number">${status.inbox.accepted}</td><td class="number">${status.inbox.processed}</td>
<td class="number">${status.inbox.rejected}</td><td class="number">${status.inbox.failed}</td>
<td>${hooksLine(facts.hooks)}</td>
</tr></tbody>
</table>
<p class="muted">As of ${shownTime(status.generated_at)}; this page reloads itself.</p>`
  return layout('Overview', body, { frame: facts.frame })
}
