// Hook registration: make the CRM's hooks match what crm-sync needs — one per webhook model of the
// resource table and event (WEBHOOK_MODELS x WEBHOOK_EVENTS) with HOOK_OBJECT_TYPE, pointing at
// PUBLIC_URL — while never touching hooks that are not crm-sync's. A hook of crm-sync's that the CRM
// shows disabled is replaced like a missing one.
// Replicas starting together are serialised by a lease (store/leases.ts).
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pLimit from 'p-limit'
import type { CrmClient, Hook, NewHook } from '../api-client/crm.ts'
import { webhookPath } from '../receiver/app.ts'
import {
  type HookObjectType,
  hookIncludes,
  resourceByWebhookModel,
  WEBHOOK_EVENTS,
  WEBHOOK_MODELS,
  type WebhookModel,
} from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import { releaseLease, takeLease } from '../store/leases.ts'

export type HooksApi = Pick<CrmClient, 'listHooks' | 'createHook' | 'deleteHook'>

export interface HookSettings {
  publicUrl: string
  secret: string
  objectType: HookObjectType
  /** The resources mirrored (MIRROR_RESOURCES): hooks only for their models; every model if not given. */
  resources?: readonly string[]
}

export interface RegistrationResult {
  created: NewHook[]
  deleted: Hook[]
  kept: Hook[]
  foreign: Hook[]
}

// The lease that serialises the registrations of an account (in the account's sync schema). It holds
// no database connection while the registration asks the CRM: a lock would hold one for the whole
// registration, away from the account's other work and every other account's.
const REGISTRATION_LEASE = 'hook-registration'
/** A holder renews its lease this often; one that died holds the others back for LEASE_MS at most. */
const LEASE_MS = 20_000
const RENEW_MS = 5_000
/** How often a registration waiting for the lease looks again. */
const WAIT_MS = 500
// Requests of one registration in flight at once: twelve hooks in three round trips, a small share
// of the account's budget (50 requests / 10 s).
const REQUESTS_AT_ONCE = 4

/** The registration no longer holds its lease (another process took it): it stops before deleting. */
class LeaseLost extends Error {
  override name = 'LeaseLost'
}

/**
 * Runs `work` holding the account's registration lease, renewed every RENEW_MS until `work` ends.
 * `work` is given `held()`, which renews it at once: false once a renewal found the lease another's
 * or failed twice running, or when this one does.
 */
async function underLease<T>(db: Db, work: (held: () => Promise<boolean>) => Promise<T>): Promise<T> {
  const holder = randomUUID()
  while (!(await takeLease(db, REGISTRATION_LEASE, holder, LEASE_MS))) await sleep(WAIT_MS)
  let ended = false
  let lost = false
  let failures = 0
  let stopRenewing = () => {}
  // One renewal after the other, the last awaited before the release: a renewal still under way
  // could otherwise take the lease again once it is given back.
  const renewing = (async () => {
    while (!ended) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RENEW_MS)
        stopRenewing = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      if (ended) return
      try {
        if (!(await takeLease(db, REGISTRATION_LEASE, holder, LEASE_MS))) lost = true
        failures = 0
      } catch {
        if (++failures >= 2) lost = true
      }
    }
  })()
  const held = async () => {
    if (!lost && !(await takeLease(db, REGISTRATION_LEASE, holder, LEASE_MS))) lost = true
    return !lost
  }
  try {
    return await work(held)
  } finally {
    ended = true
    stopRenewing()
    await renewing
    await releaseLease(db, REGISTRATION_LEASE, holder).catch(() => {})
  }
}

/** Runs every request, then throws the first failure, if any: none is left running on its own. */
async function allOf(requests: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(requests)).find((outcome) => outcome.status === 'rejected')
  if (failed) throw failed.reason
}

/** A hook is crm-sync's when its target ends in crm-sync's receiver path (any host, any secret). */
const OWN_TARGET = new RegExp(
  String.raw`\/webhooks\/crm\/[^/]+\/(${WEBHOOK_MODELS.join('|')})\/(${WEBHOOK_EVENTS.join('|')})$`,
  'i',
)

export function isOwnHook(hook: Pick<Hook, 'target_url'>): boolean {
  if (!hook.target_url) return false
  try {
    return OWN_TARGET.test(new URL(hook.target_url).pathname)
  } catch {
    return false
  }
}

const normaliseIncludes = (value: string | null | undefined) =>
  (value ?? '')
    .split(/[\s,]+/)
    .filter(Boolean)
    .sort()
    .join(',')

export function desiredHooks(settings: HookSettings): NewHook[] {
  const base = settings.publicUrl.replace(/\/+$/, '')
  const mirrored = (model: WebhookModel) =>
    settings.resources?.includes(resourceByWebhookModel(model)?.name ?? '') ?? true
  return WEBHOOK_MODELS.filter(mirrored).flatMap((model) =>
    WEBHOOK_EVENTS.map((event) => {
      const includes = hookIncludes(model, settings.objectType)
      return {
        model,
        event,
        object_type: settings.objectType,
        target_url: `${base}${webhookPath(settings.secret, model, event)}`,
        ...(includes ? { includes } : {}),
      }
    }),
  )
}

const OFF_STATES = /^(disabled|inactive|paused|suspended|deactivated)$/i

/**
 * Whether the CRM reports the hook as switched off. The spec shows no such field (only `verified`,
 * `failed` and `failed_at`, their meaning not shown), so the forms services use are recognised:
 * `active` or `enabled` false, `disabled` true, a `status` or `state` such as "disabled", a
 * `disabled_at`. Failures alone do not make a hook disabled.
 */
export function isDisabled(hook: Hook): boolean {
  const { active, enabled, disabled, status, state, disabled_at: disabledAt } = hook
  if (active === false || enabled === false || disabled === true) return true
  if ([status, state].some((value) => typeof value === 'string' && OFF_STATES.test(value))) return true
  return typeof disabledAt === 'string' && disabledAt !== ''
}

const sameHook = (hook: Hook, wanted: NewHook) =>
  !isDisabled(hook) &&
  hook.model === wanted.model &&
  hook.event === wanted.event &&
  hook.object_type === wanted.object_type &&
  hook.target_url === wanted.target_url &&
  normaliseIncludes(hook.includes) === normaliseIncludes(wanted.includes)

/** Idempotent: a second run creates and deletes nothing. */
export async function registerHooks(
  db: Db,
  api: HooksApi,
  settings: HookSettings,
): Promise<RegistrationResult> {
  const atOnce = pLimit(REQUESTS_AT_ONCE)
  return underLease(db, async (held) => {
    const existing = await api.listHooks()
    const foreign = existing.filter((hook) => !isOwnHook(hook))
    const own = existing.filter(isOwnHook)
    const kept: Hook[] = []
    const deleted: Hook[] = []
    const missing: NewHook[] = []
    for (const wanted of desiredHooks(settings)) {
      const match = own.find((hook) => sameHook(hook, wanted) && !kept.includes(hook))
      if (match) kept.push(match)
      else missing.push(wanted)
    }
    // Create before deleting: a moment of duplicate deliveries is harmless, a moment without a hook is not.
    // A few requests at a time (each waits for the budget): the lease is held for three or four round
    // trips rather than one per hook.
    await allOf(missing.map((hook) => atOnce(() => api.createHook(hook))))
    const stale = own.filter((hook) => !kept.includes(hook))
    // Checked just before: a process that took the lease meanwhile may be registering hooks of its own.
    if (stale.length > 0 && !(await held()))
      throw new LeaseLost('another process took the hook registration lease')
    await allOf(stale.map((hook) => atOnce(() => api.deleteHook(hook.id))))
    deleted.push(...stale)
    return { created: missing, deleted, kept, foreign }
  })
}

export type ReregistrationReason = 'missing' | 'disabled' | 'changed'

/**
 * Why the hooks a registration created were needed: for their model and event the CRM had no hook of
 * crm-sync's (`missing`), a disabled one (`disabled`), or one with another target, object type or
 * includes (`changed`: a new secret, PUBLIC_URL or HOOK_OBJECT_TYPE, or an edit in the CRM).
 */
export function reregistrationReasons(result: RegistrationResult): Record<ReregistrationReason, number> {
  const reasons: Record<ReregistrationReason, number> = { missing: 0, disabled: 0, changed: 0 }
  for (const created of result.created) {
    const replaced = result.deleted.filter(
      (hook) => hook.model === created.model && hook.event === created.event,
    )
    const reason = replaced.some(isDisabled) ? 'disabled' : replaced.length > 0 ? 'changed' : 'missing'
    reasons[reason] += 1
  }
  return reasons
}

/** Removes crm-sync's own hooks (any URL, any secret); foreign hooks stay. */
export async function removeHooks(db: Db, api: HooksApi): Promise<Hook[]> {
  return underLease(db, async () => {
    const own = (await api.listHooks()).filter(isOwnHook)
    for (const hook of own) await api.deleteHook(hook.id)
    return own
  })
}

/** The target URL with its secret segment masked, for lists and logs. */
export function maskTarget(target: string | null | undefined): string {
  if (!target) return ''
  return target.replace(/(\/webhooks\/crm\/)[^/]+(\/)/i, '$1***$2')
}
