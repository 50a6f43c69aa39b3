// Webhooks: the registry behind /api/hooks and the four payload shapes of a delivery.
import { z } from 'zod'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS, type WebhookModel } from '../src/resources/index.ts'
import type { DeliveryQueue } from './deliveries.ts'
import type { HookModel, HookRow } from './rows.ts'
import type { Store } from './store.ts'
import type { View } from './view.ts'

/** The models of the resource table's webhooks: those the upstream takes hooks for. */
export const HOOK_MODELS = WEBHOOK_MODELS as readonly [WebhookModel, ...WebhookModel[]]
const lowerCase = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value)

export const hookInput = z.object({
  model: z.preprocess(lowerCase, z.enum(HOOK_MODELS)),
  event: z.preprocess(lowerCase, z.enum(WEBHOOK_EVENTS)),
  target_url: z
    .string()
    .max(190, 'is too long (maximum is 190 characters)')
    .refine((value) => /^https?:\/\/[^\s]+$/.test(value) && URL.canParse(value), 'is not a valid URL'),
  object_type: z.preprocess(lowerCase, z.enum(['nested', 'flat', 'api', 'lean'])),
  includes: z.string().nullable().optional(),
  filter_group_id: z.number().int().nullable().optional(),
})

export function renderHook(view: View, hook: HookRow): Record<string, unknown> {
  return {
    id: hook.id,
    account_id: view.accountId,
    // The index shows the model capitalised, though hooks are created with it in lower case.
    model: hook.model.charAt(0).toUpperCase() + hook.model.slice(1),
    event: hook.event,
    target_url: hook.target_url,
    object_type: hook.object_type,
    includes: hook.includes,
    filter_group_id: hook.filter_group_id,
    hook_type: 'url',
    verified: hook.verified,
    failed: hook.failed,
    failed_at: hook.failed_at === null ? null : view.time(hook.failed_at),
    created_at: view.time(hook.created_at),
    updated_at: view.time(hook.updated_at),
  }
}

/** A create, update or destroy of a record of a hooked kind, as its hooks see it. */
export interface Change {
  model: HookModel
  event: 'create' | 'update' | 'destroy'
  id: number
  wrapper: string
  /** The record as the API shows it, with the given includes (comma-separated in the hook). */
  render(includes: string | null): Record<string, unknown>
  flat(): Record<string, unknown>
}

/** `lean` and `nested` name the model and event; `api` and `flat` do not, so receivers must know them. */
export function payloadOf(hook: HookRow, change: Change): unknown {
  const { model, event } = change
  switch (hook.object_type) {
    case 'lean':
      return { model, event, record_id: change.id }
    case 'nested':
      return { model, event, record: change.render(hook.includes) }
    case 'api':
      return { [change.wrapper]: change.render(hook.includes) }
    case 'flat':
      return change.flat()
  }
}

/** Queues one delivery per matching hook; payloads are rendered now, as the record is at this change. */
export function publish(store: Store, queue: DeliveryQueue, change: Change): void {
  for (const hook of store.hooks.rows.values()) {
    if (hook.model !== change.model || hook.event !== change.event) continue
    queue.enqueue({ hookId: hook.id, url: hook.target_url, body: JSON.stringify(payloadOf(hook, change)) })
  }
}

/** Failures count into the hook, as the upstream's index shows them; a success verifies it. */
export function settleDelivery(store: Store, hookId: number, ok: boolean, now: number): void {
  const hook = store.hooks.rows.get(hookId)
  if (!hook) return
  if (ok) {
    hook.verified = true
  } else {
    hook.failed++
    hook.failed_at = now
  }
}
