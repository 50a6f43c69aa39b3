// What a CRM delivery says: its shape, model, event and record id. The upstream signs nothing and
// `api`/`flat` bodies name no model or event, so the URL the hook was registered with supplies them.

import {
  type HookObjectType,
  WEBHOOK_EVENTS,
  WEBHOOK_MODELS,
  type WebhookEvent,
  type WebhookModel,
} from '../resources/index.ts'

// Derived from the resource table (src/resources/index.ts); re-exported for the receiver's callers.
export { WEBHOOK_EVENTS, WEBHOOK_MODELS, type WebhookEvent, type WebhookModel }
/** The shapes a delivery comes in are the hooks' object types. */
export type DeliveryShape = HookObjectType

export interface Delivery {
  shape: DeliveryShape
  recordId: number
  /** The record the body carries (nested, api, flat), or null (lean). */
  record: Record<string, unknown> | null
}

export type Classification =
  | { ok: true; delivery: Delivery }
  | { ok: false; reason: string; shape?: DeliveryShape }

export function parseModel(value: string): WebhookModel | undefined {
  const lower = value.toLowerCase()
  return WEBHOOK_MODELS.find((model) => model === lower)
}

export function parseEvent(value: string): WebhookEvent | undefined {
  const lower = value.toLowerCase()
  return WEBHOOK_EVENTS.find((event) => event === lower)
}

/**
 * A URL segment as a metric label: a name such as the CRM's models and events (lower case), else
 * `other`, so that a label never holds what a sender made up beyond that.
 */
export function segmentLabel(segment: string): string {
  const lower = segment.toLowerCase()
  return /^[a-z][a-z0-9_]{0,29}$/.test(lower) ? lower : 'other'
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function recordId(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value
  return typeof number === 'number' && Number.isSafeInteger(number) && number > 0 ? number : undefined
}

function contradiction(
  body: Record<string, unknown>,
  model: WebhookModel,
  event: WebhookEvent,
): string | undefined {
  if ('model' in body && (typeof body.model !== 'string' || body.model.toLowerCase() !== model)) {
    return `the body's model ${JSON.stringify(body.model)} contradicts the URL's model "${model}"`
  }
  if ('event' in body && (typeof body.event !== 'string' || body.event.toLowerCase() !== event)) {
    return `the body's event ${JSON.stringify(body.event)} contradicts the URL's event "${event}"`
  }
  return undefined
}

function withId(shape: DeliveryShape, id: unknown, record: Record<string, unknown> | null): Classification {
  const parsed = recordId(id)
  if (parsed === undefined) {
    return {
      ok: false,
      shape,
      reason: `the ${shape} payload carries no usable record id (a positive integer)`,
    }
  }
  return { ok: true, delivery: { shape, recordId: parsed, record } }
}

/** Recognises the shapes of `object_type` (HOOK_OBJECT_TYPES): lean, nested, api and flat. */
export function classifyDelivery(body: unknown, model: WebhookModel, event: WebhookEvent): Classification {
  if (!isObject(body)) return { ok: false, reason: 'the body must be a JSON object' }
  const mismatch = contradiction(body, model, event)
  if (mismatch) return { ok: false, reason: mismatch }

  if ('record' in body) {
    if (!isObject(body.record))
      return { ok: false, shape: 'nested', reason: 'the nested payload\'s "record" is not an object' }
    return withId('nested', body.record.id, body.record)
  }
  if ('record_id' in body) return withId('lean', body.record_id, null)

  const wrappers = WEBHOOK_MODELS.filter((wrapper) => isObject(body[wrapper]))
  if (wrappers.length > 0 && !('id' in body)) {
    const [wrapper] = wrappers
    if (wrappers.length > 1 || wrapper !== model) {
      return {
        ok: false,
        shape: 'api',
        reason: `the api payload wraps a ${wrappers.join(' and a ')}, but the URL is for a ${model}`,
      }
    }
    const record = body[model] as Record<string, unknown>
    return withId('api', record.id, record)
  }
  if ('id' in body) return withId('flat', body.id, body)
  return {
    ok: false,
    reason:
      'unknown payload shape: expected lean {model, event, record_id}, nested {model, event, record}, api {<model>: {...}} or flat {id, ...}',
  }
}
