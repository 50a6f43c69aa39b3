// The webhook inbox: deliveries newest first, filtered by outcome, model, event and time (a form that
// works without script), a replay of every rejected or failed delivery since a time with the latest
// such replays and their progress, and one delivery with its payload, its outcome and a replay button.
import { html } from 'hono/html'
import type { DeliveryReplay } from '../../store/delivery-replays.ts'
import type { InboxRow } from '../../store/inbox.ts'
import type { DeliveryFilter, DeliverySummary } from '../../store/inbox-view.ts'
import { type Frame, type Html, layout, shownTime, stateClass } from './layout.ts'

/** The inbox's statuses as the page names them (an accepted delivery waits to be applied). */
export const OUTCOMES = {
  waiting: 'accepted',
  applied: 'processed',
  rejected: 'rejected',
  failed: 'failed',
} as const
export type Outcome = keyof typeof OUTCOMES

const outcomeOf = (status: string): Outcome =>
  (Object.entries(OUTCOMES).find(([, stored]) => stored === status)?.[0] as Outcome | undefined) ?? 'waiting'

const outcomeClass = (outcome: Outcome) =>
  stateClass(outcome === 'applied' ? 'on time' : outcome === 'waiting' ? 'late' : 'error')

export interface DeliveriesView {
  deliveries: DeliverySummary[]
  filter: DeliveryFilter & { outcome?: Outcome }
  /** The query string of the next page, or null. */
  next: string | null
  /** The latest replays of every rejected or failed delivery since a time; null: replays are off. */
  replays: DeliveryReplay[] | null
  /** Whose page: where its links go. */
  frame: Frame
}

function option(value: string, label: string, selected: string | undefined): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`
}

const replayClass = (state: DeliveryReplay['state']) =>
  stateClass(state === 'finished' ? 'on time' : state === 'running' ? 'late' : 'error')

function replaysSection(base: string, replays: DeliveryReplay[], since: string): Html {
  return html`<form method="post" action="${base}/deliveries/replays" id="replay-all">
Replay every <label><input type="checkbox" name="statuses" value="rejected" checked> rejected</label>
/ <label><input type="checkbox" name="statuses" value="failed" checked> failed</label> delivery
<label>since (UTC) <input type="datetime-local" name="since" value="${since}" required></label>
<button type="submit">Replay</button>
</form>
${
  replays.length === 0
    ? ''
    : html`<table id="replays">
<thead><tr><th>Replay</th><th>Asked</th><th>Since</th><th>Outcomes</th><th class="number">Done</th><th>State</th><th></th></tr></thead>
<tbody>
${replays.map(
  (replay) => html`<tr data-replay="${replay.id}" data-state="${replay.state}">
<td>${replay.id}</td><td>${shownTime(replay.requested_at)}</td><td>${shownTime(replay.since)}</td>
<td>${replay.statuses.join(', ')}</td><td class="number">${replay.done} of ${replay.total}</td>
<td><span class="${replayClass(replay.state)}">${replay.state}</span>${replay.finished_at ? html` ${shownTime(replay.finished_at)}` : ''}</td>
<td>${
    replay.state === 'running'
      ? html`<form class="inline" method="post" action="${base}/deliveries/replays/${replay.id}/cancel"><button type="submit">Cancel</button></form>`
      : ''
  }</td>
</tr>`,
)}
</tbody>
</table>`
}`
}

export function deliveriesPage({ deliveries, filter, next, replays, frame }: DeliveriesView): Html {
  const { base } = frame
  const since = filter.since ? filter.since.toISOString().slice(0, 16) : ''
  const body = html`
<h2>Deliveries</h2>
<form method="get" action="${base}/deliveries" id="filter">
<label>Outcome <select name="outcome">${option('', 'any', filter.outcome ?? '')}${Object.keys(OUTCOMES).map((name) => option(name, name, filter.outcome))}</select></label>
<label>Model <input name="model" value="${filter.model ?? ''}" size="10"></label>
<label>Event <input name="event" value="${filter.event ?? ''}" size="8"></label>
<label>Since (UTC) <input type="datetime-local" name="since" value="${since}"></label>
<button type="submit">Filter</button>
</form>
${replays === null ? '' : replaysSection(base, replays, since)}
<table id="deliveries">
<thead><tr><th>Delivery</th><th>Received</th><th>Model</th><th>Event</th><th class="number">Record</th><th>Outcome</th><th>Why</th></tr></thead>
<tbody>
${deliveries.map((delivery) => {
  const outcome = outcomeOf(delivery.status)
  return html`<tr data-delivery="${delivery.id}" data-outcome="${outcome}">
<td><a href="${base}/deliveries/${delivery.id}">${delivery.id}</a></td><td>${shownTime(delivery.received_at)}</td>
<td>${delivery.model ?? '–'}</td><td>${delivery.event ?? '–'}</td><td class="number">${delivery.record_id ?? '–'}</td>
<td><span class="${outcomeClass(outcome)}">${outcome}</span></td>
<td class="error">${delivery.reason ?? delivery.error ?? ''}</td>
</tr>`
})}
</tbody>
</table>
${deliveries.length === 0 ? html`<p class="muted">No delivery matches.</p>` : ''}
${next === null ? '' : html`<p><a href="${base}/deliveries?${next}">Older deliveries</a></p>`}`
  return layout('Deliveries', body, { frame })
}

export function deliveryPage(row: InboxRow, options: { notice?: string; frame: Frame }): Html {
  const { notice, frame } = options
  const { base } = frame
  const outcome = outcomeOf(row.status)
  const payload = row.payload === null ? (row.body ?? '') : JSON.stringify(row.payload, null, 2)
  const body = html`
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<h2>Delivery ${row.id}: ${row.model ?? '?'} ${row.event ?? '?'}</h2>
<p id="delivery-outcome" data-outcome="${outcome}"><span class="${outcomeClass(outcome)}">${outcome}</span>,
received ${shownTime(row.received_at)}${row.processed_at ? html`, applied ${shownTime(row.processed_at)}` : ''};
shape ${row.shape ?? 'unknown'}, record ${row.record_id ?? '–'}, ${row.attempts} attempt(s).</p>
${row.reason ? html`<p class="error">Rejected: ${row.reason}</p>` : ''}
${row.error ? html`<p class="error">Last error: ${row.error}</p>` : ''}
${
  outcome === 'waiting'
    ? ''
    : html`<form method="post" action="${base}/deliveries/${row.id}/replay"><button type="submit">Replay</button></form>`
}
<h3>Payload</h3>
<pre>${payload}</pre>
<h3>Headers</h3>
${headersTable(row.headers)}
<p><a href="${base}/deliveries">All deliveries</a></p>`
  return layout(`Delivery ${row.id}`, body, { frame })
}

/** The headers a delivery was kept with (secrets masked when it was received: receiver/headers.ts). */
function headersTable(headers: unknown): Html {
  const entries = headers && typeof headers === 'object' ? Object.entries(headers) : []
  if (entries.length === 0) return html`<p class="muted">Not kept (received before headers were).</p>`
  return html`<table id="delivery-headers">
<tbody>
${entries.map(([name, value]) => html`<tr><th scope="row">${name}</th><td>${String(value)}</td></tr>`)}
</tbody>
</table>`
}
