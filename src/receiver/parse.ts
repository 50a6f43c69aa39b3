// The receiver's second step: what a request is for (its path: service, secret, model, event) and
// what its body says (JSON, nested at most MAX_DEPTH levels, in a shape crm-sync recognises).
import { MAX_DEPTH, nestedDeeperThan } from '../store/jsonb.ts'
import type { UnroutedOutcome } from './counters.ts'
import {
  classifyDelivery,
  type Delivery,
  type DeliveryShape,
  parseEvent,
  parseModel,
  segmentLabel,
  type WebhookEvent,
  type WebhookModel,
} from './deliveries.ts'

/** The path crm-sync registers for a model and event; the secret is a path segment. */
export function webhookPath(secret: string, model: WebhookModel, event: WebhookEvent): string {
  return `/webhooks/crm/${encodeURIComponent(secret)}/${model}/${event}`
}

export type Route =
  | { ok: true; model: WebhookModel; event: WebhookEvent }
  /**
   * A model or an event crm-sync does not mirror, or a path of another shape: no endpoint. `model`
   * and `event` are the URL's segments as metric labels (segmentLabel).
   */
  | { ok: false; outcome: UnroutedOutcome; model: string; event: string }

export interface ParsedPath {
  /** The secret segment as presented, decoded. */
  presented: string | undefined
  route: Route
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** `/webhooks/<service>/<secret>/<model>/<event>`: the secret and the endpoint it names, if any. */
export function parsePath(path: string): ParsedPath {
  const segments = path.split('/').filter(Boolean).slice(1).map(decodeSegment)
  const [service, presented, modelSegment = '', eventSegment = '', ...rest] = segments
  const model = parseModel(modelSegment)
  const event = parseEvent(eventSegment)
  if (service === 'crm' && rest.length === 0 && model && event)
    return { presented, route: { ok: true, model, event } }
  const outcome: UnroutedOutcome =
    service !== 'crm' || rest.length > 0 ? 'unknown_path' : model ? 'unknown_event' : 'unknown_model'
  return {
    presented,
    route: { ok: false, outcome, model: segmentLabel(modelSegment), event: segmentLabel(eventSegment) },
  }
}

export type ParsedBody =
  | {
      ok: true
      delivery: Delivery
      /** The body as JavaScript reads it. */
      json: unknown
    }
  | {
      ok: false
      /** Why the delivery is refused (kept in the inbox's rejected row). */
      reason: string
      /** The shape recognised, if any. */
      shape?: DeliveryShape
      /** The body as JavaScript reads it; undefined when it is kept as text (not JSON, or too deep). */
      json?: unknown
    }

/** The body read as a delivery to `model` and `event`, or why it is refused. */
export function parseBody(text: string, model: WebhookModel, event: WebhookEvent): ParsedBody {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    // (JSON.parse's message quotes the body, NUL included: the inbox writer makes it storable)
    return { ok: false, reason: `malformed JSON: ${(error as Error).message}` }
  }
  // Kept as text: PostgreSQL's jsonb, and JavaScript, cannot take JSON nested many thousands deep.
  if (nestedDeeperThan(text, MAX_DEPTH))
    return { ok: false, reason: `nested deeper than ${MAX_DEPTH} levels` }
  const classified = classifyDelivery(json, model, event)
  if (!classified.ok) return { ok: false, reason: classified.reason, shape: classified.shape, json }
  return { ok: true, delivery: classified.delivery, json }
}
