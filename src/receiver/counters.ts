// The receiver's counters, read by the metrics endpoint at each scrape (src/metrics/copied-counters.ts).
import type { DeliveryShape, WebhookEvent, WebhookModel } from './deliveries.ts'

/** Why an authenticated POST has no endpoint (answered 404). */
export type UnroutedOutcome = 'unknown_model' | 'unknown_event' | 'unknown_path'

/**
 * What became of a delivery to an endpoint: stored as accepted or as rejected (400), ended by its
 * sender before its body arrived (aborted, 400), or not stored (unavailable, 503).
 */
export type RoutedOutcome = 'accepted' | 'rejected' | 'aborted' | 'unavailable'

/** The labels of a delivery's series: `shape` is `unknown` where no shape was recognised. */
export type DeliveryLabels =
  | { model: WebhookModel; event: WebhookEvent; shape: DeliveryShape | 'unknown'; outcome: RoutedOutcome }
  | {
      /** The URL's segments as labels (segmentLabel): what a sender made up becomes `other`. */
      model: string
      event: string
      shape: 'unknown'
      outcome: UnroutedOutcome
    }

export interface DeliveryCount {
  readonly labels: DeliveryLabels
  readonly count: number
}

/** Deliveries counted by their labels. */
export interface DeliveryCounts {
  add(labels: DeliveryLabels, by?: number): void
  /** The count of one series; 0 for a series never counted. */
  get(labels: DeliveryLabels): number
  /** Every series counted, in the order each was first counted. */
  all(): DeliveryCount[]
}

export interface ReceiverCounters {
  readonly deliveries: DeliveryCounts
  /** Requests to the webhook endpoint with a missing or wrong secret. */
  unauthorized: number
  /** Deliveries that carried WEBHOOK_SECRET_PREVIOUS. */
  previousSecret: number
}

function createDeliveryCounts(): DeliveryCounts {
  // Looked up by the labels' values; the labels themselves are kept beside each count.
  const series = new Map<string, { labels: DeliveryLabels; count: number }>()
  const keyOf = ({ model, event, shape, outcome }: DeliveryLabels) =>
    JSON.stringify([model, event, shape, outcome])
  return {
    add(labels, by = 1) {
      const key = keyOf(labels)
      const entry = series.get(key)
      if (entry) entry.count += by
      else series.set(key, { labels: { ...labels }, count: by })
    },
    get: (labels) => series.get(keyOf(labels))?.count ?? 0,
    all: () => [...series.values()].map(({ labels, count }) => ({ labels: { ...labels }, count })),
  }
}

export function createReceiverCounters(): ReceiverCounters {
  return { deliveries: createDeliveryCounts(), unauthorized: 0, previousSecret: 0 }
}
