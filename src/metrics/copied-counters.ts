// The plain counters of the receiver and the API clients, copied into Prometheus counters at each
// scrape. They only ever grow, so setting each series to the plain counter's value keeps it a counter.
import { Counter, type Registry } from 'prom-client'
import type { Counter as PlainCounter, UpstreamMetrics } from '../api-client/metrics.ts'
import type { ReceiverCounters } from '../receiver/counters.ts'
import { PREFIX } from './metric-prefix.ts'

function mirrored<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
) {
  const counter = new Counter<L>({ name: `${PREFIX}${name}`, help, labelNames, registers })
  return (samples: { labels: { readonly [K in L]?: string }; value: number }[]) => {
    // A series is reset and set in one synchronous step, so a concurrent scrape never sees it half-done.
    counter.reset()
    for (const { labels, value } of samples) {
      const picked = Object.fromEntries(labelNames.map((label) => [label, labels[label] ?? ''])) as Record<
        L,
        string
      >
      counter.inc(picked, value)
    }
  }
}

export function copyCounters(
  registers: Registry[],
  sources: { receiverCounters: ReceiverCounters; upstream: UpstreamMetrics },
): () => void {
  const deliveries = mirrored(
    registers,
    'webhook_deliveries_total',
    'Webhook deliveries received, by model, event, body shape and outcome (accepted, rejected, aborted, unavailable; unknown_model, unknown_event, unknown_path: answered 404)',
    ['model', 'event', 'shape', 'outcome'],
  )
  const unauthorized = mirrored(
    registers,
    'webhook_unauthorized_total',
    'Requests to the webhook endpoint with a missing or wrong secret',
    [],
  )
  const previousSecret = mirrored(
    registers,
    'webhook_previous_secret_total',
    'Deliveries that carried WEBHOOK_SECRET_PREVIOUS (accepted during a rotation of the secret)',
    [],
  )
  const requests = mirrored(
    registers,
    'upstream_requests_total',
    'Requests to the upstream services, by upstream, route family (e.g. people.show) and status (HTTP code, timeout, network)',
    ['upstream', 'route', 'status'],
  )
  const retries = mirrored(
    registers,
    'upstream_retries_total',
    'Upstream requests repeated, by upstream, route family and reason',
    ['upstream', 'route', 'reason'],
  )
  const throttled = mirrored(
    registers,
    'upstream_throttled_seconds_total',
    'Seconds spent waiting for the shared request budget (its window or a 429 pause), by upstream',
    ['upstream'],
  )
  const narrowed = mirrored(
    registers,
    'upstream_budget_narrowed_total',
    'Times the shared request budget narrowed after a 429 at its limit (it widens again without 429s), by upstream',
    ['upstream'],
  )
  const plain = (counter: PlainCounter) => counter.samples()
  return () => {
    const { receiverCounters, upstream } = sources
    deliveries(receiverCounters.deliveries.all().map(({ labels, count }) => ({ labels, value: count })))
    unauthorized([{ labels: {}, value: receiverCounters.unauthorized }])
    previousSecret([{ labels: {}, value: receiverCounters.previousSecret }])
    requests(plain(upstream.requests))
    retries(plain(upstream.retries))
    throttled(plain(upstream.throttledSeconds))
    narrowed(plain(upstream.budgetNarrowed))
  }
}
