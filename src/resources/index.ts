// The table of mirrored resources. Each resource is described once, in the file of its service
// (crm.ts, reservation.ts; the CRM's child tables in crm-children.ts); every list of resources, tables,
// webhook models and the Kysely table types (src/store/schema.ts) is derived from it below, so that a new
// resource is its entry there, its migration and its simulator kind (sandbox/), and nothing else.
// The migrations are frozen SQL and do not import this file; test/store/schema.test.ts proves the two agree.
import { crmResources } from './crm.ts'
import { reservationResources } from './reservation.ts'
import type { ChildMapping, Resource } from './types.ts'

export { companies, deals, notes, people, projects, tasks } from './crm.ts'
export { activities } from './crm-activities.ts'
export {
  compareIds,
  hasTextId,
  idBeforeAll,
  idKey,
  idOf,
  idType,
  parseId,
  type RecordId,
} from './ids.ts'
export { bookings, contacts } from './reservation.ts'
export type {
  ChildMapping,
  ChildTable,
  Columns,
  MemberTable,
  Resource,
  RowOf,
} from './types.ts'

// ---- the table ------------------------------------------------------------------------------

/** Every mirrored resource, in the order runs sweep them and status lists them: the one table. */
export const resources = [...crmResources, ...reservationResources] as const

export type AnyResource = (typeof resources)[number]
export type ResourceName = AnyResource['name']
export type AnyChildTable = AnyResource['children'][number]['child']

// ---- lists derived from the table -----------------------------------------------------------

/** Qualified names (`crm.people`): the CLI's `resync --resource` help, retention of sweep rows. */
export const resourceNames: ResourceName[] = resources.map((r) => r.name)

/** Child tables, each once, in the order resources map them: the demo's queries, test/store/schema.test.ts. */
export const childTables: AnyChildTable[] = [
  ...new Set(
    resources.flatMap((r): readonly ChildMapping<AnyChildTable>[] => r.children).map((m) => m.child),
  ),
]

export type WebhookModel = NonNullable<AnyResource['webhookModel']>

/**
 * Models the CRM sends webhooks for (`person`): the receiver's routes and its `api` shape, the hooks
 * registered (src/hooks/registration.ts), the CRM client's `NewHook`.
 */
export const WEBHOOK_MODELS: readonly WebhookModel[] = resources.flatMap((r) =>
  r.webhookModel ? [r.webhookModel] : [],
)

export function findResource(name: string): AnyResource | undefined {
  return resources.find((r) => r.name === name)
}

export function resourceByWebhookModel(model: string): AnyResource | undefined {
  const wanted = model.toLowerCase()
  return resources.find((r) => r.webhookModel === wanted)
}

/**
 * Whether the resource's rows are ordered by the upstream's `updated_at` (all but users, reservation
 * tags and webforms): see `ordered` in ./types.ts.
 */
export function hasUpdatedAt(resource: Resource): boolean {
  return resource.ordered !== false && 'updated_at' in resource.columns
}

// ---- the CRM's webhooks: the same for every model -------------------------------------------

/** Events hooked for every model: the receiver's routes, the hooks registered, the CRM client's `NewHook`. */
export const WEBHOOK_EVENTS = ['create', 'update', 'destroy'] as const
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number]

/**
 * The CRM's `object_type`s, the shapes of a delivery: HOOK_OBJECT_TYPE (src/config), the shapes the
 * receiver recognises (`DeliveryShape`), the CRM client's `NewHook`.
 */
export const HOOK_OBJECT_TYPES = ['lean', 'api', 'nested', 'flat'] as const
export type HookObjectType = (typeof HOOK_OBJECT_TYPES)[number]

/**
 * Includes a hook of that object type asks for: with `nested` and `api` the payload carries the
 * resource's includes, so that it can be applied without a `show`; `lean` and `flat` carry none.
 */
export function hookIncludes(model: string, objectType: HookObjectType): string | undefined {
  if (objectType !== 'nested' && objectType !== 'api') return undefined
  const includes = resourceByWebhookModel(model)?.includes ?? []
  return includes.length > 0 ? includes.join(',') : undefined
}
