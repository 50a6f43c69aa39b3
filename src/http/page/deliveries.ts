// The webhook inbox: deliveries newest first, filtered by outcome, model, event and time (a form that
// works without script), and one delivery with its payload, its outcome and a replay button.
import { html } from 'hono/html'
import type { InboxRow } from '../../store/inbox.ts'
import type { DeliveryFilter, DeliverySummary } from '../../store/inbox-view.ts'
import { type Html, layout, shownTime, stateClass } from './layout.ts'

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
}

function option(value: string, label: string, selected: string | undefined): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`
}

export function deliveriesPage({ deliveries, filter, next }: DeliveriesView): Html {
  const since = filter.since ? filter.since.toISOString().slice(0, 16) : ''
  const body = html`
<h2>Deliveries</h2>
<form method="get" action="/deliveries" id="filter">
<label>Outcome <select name="outcome">${option('', 'any', filter.outcome ?? '')}${Object.keys(OUTCOMES).map((name) => option(name, name, filter.outcome))}</select></label>
<label>Model <input name="model" value="${filter.model ?? ''}" size="10"></label>
<label>Event <input name="event" value="${filter.event ?? ''}" size="8"></label>
<label>Since (UTC) <input type="datetime-local" name="since" value="${since}"></label>
<button type="submit">Filter</button>
</form>
<table id="deliveries">
<thead><tr><th>Delivery</th><th>Received</th><th>Model</th><th>Event</th><th class="number">Record</th><th>Outcome</th><th>Why</th></tr></thead>
<tbody>
${deliveries.map((delivery) => {
  const outcome = outcomeOf(delivery.status)
  return html`<tr data-delivery="${delivery.id}" data-outcome="${outcome}">
<td><a href="/deliveries/${delivery.id}">${delivery.id}</a></td><td>${shownTime(delivery.received_at)}</td>
<td>${delivery.model ?? '–'}</td><td>${delivery.event ?? '–'}</td><td class="number">${delivery.record_id ?? '–'}</td>
<td><span class="${outcomeClass(outcome)}">${outcome}</span></td>
<td class="error">${delivery.reason ?? delivery.error ?? ''}</td>
</tr>`
})}
</tbody>
</table>
${deliveries.length === 0 ? html`<p class="muted">No delivery matches.</p>` : ''}
${next === null ? '' : html`<p><a href="/deliveries?${next}">Older deliveries</a></p>`}`
  return layout('Deliveries', body)
}

export function deliveryPage(row: InboxRow, notice?: string): Html {
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
    : html`<form method="post" action="/deliveries/${row.id}/replay"><button type="submit">Replay</button></form>`
}
<h3>Payload</h3>
<pre>${payload}</pre>
<p><a href="/deliveries">All deliveries</a></p>`
  return layout(`Delivery ${row.id}`, body)
}
