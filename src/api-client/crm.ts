// The CRM: records of the resource table (wrapped under their singular name upstream, unwrapped here),
// counts, and webhooks.
import { z } from 'zod'
import type { HookObjectType, Resource, WebhookEvent, WebhookModel } from '../resources/index.ts'
import { UpstreamGoneError, UpstreamResponseError } from './errors.ts'
import type { Query, UpstreamAnswer } from './http.ts'
import {
  type ClientDeps,
  type ClientSettings,
  createReader,
  type IndexQuery,
  openUpstream,
  type ResourceReader,
} from './reader.ts'
import { recordId, unwrap } from './records.ts'

export interface CrmSettings extends ClientSettings {
  /**
   * `header` sends the key as `X-apikey`, which the real service accepts; `query` sends the documented
   * `apikey` query parameter. The header is the default because a query string lands in access logs of
   * every proxy and server on the way, and in any URL somebody logs.
   */
  auth: 'header' | 'query'
}

export interface NewHook {
  model: WebhookModel
  event: WebhookEvent
  target_url: string
  object_type: HookObjectType
  /** Space- or comma-separated sub-objects, for `nested` and `api`. */
  includes?: string
  filter_group_id?: number
}

const text = z.string().nullish()
const hookSchema = z.looseObject({
  id: recordId,
  // The index answers `Person` where create takes `person`.
  model: text.transform((model) => model?.toLowerCase() ?? null),
  event: text,
  target_url: text,
  object_type: text,
  includes: text,
  filter_group_id: z.unknown().optional(),
})

/** A registered hook as the CRM reports it, with `model` in lower case. */
export type Hook = z.output<typeof hookSchema>

export interface CrmClient extends ResourceReader {
  /** `GET /api/<resource>/count`: the number of records. */
  count(resource: Resource): Promise<number>
  listHooks(): Promise<Hook[]>
  /** The created hook, or null when the answer does not show it (its form is not documented). */
  createHook(hook: NewHook): Promise<Hook | null>
  /** `gone` when the hook did not exist (any more). */
  deleteHook(id: number): Promise<'deleted' | 'gone'>
  /**
   * One page of a record's nested listing (`people/{id}/historic_events`), its items unwrapped from
   * whatever single key wraps them; `gone` on 404 (the record is deleted upstream).
   */
  nestedPage(resource: Resource, id: number, route: string, page: NestedPageQuery): Promise<NestedPage>
}

export interface NestedPageQuery {
  /** 1-based. */
  page: number
  perPage: number
}

export type NestedPage =
  | { status: 'found'; items: unknown[]; fetchedAt: Date }
  | { status: 'gone'; fetchedAt: Date }

export function createCrmClient(settings: CrmSettings, deps: ClientDeps): CrmClient {
  const upstream = openUpstream('crm', settings, deps, (url, headers) => {
    if (settings.auth === 'query') url.searchParams.set('apikey', settings.apiKey)
    else headers.set('x-apikey', settings.apiKey)
  })
  const includesOf = (resource: Resource, includes: readonly string[] | undefined) => {
    const chosen = includes ?? resource.includes
    return chosen.length > 0 ? chosen.join(' ') : undefined
  }
  const reader = createReader({
    upstream,
    settings,
    logger: deps.logger,
    indexQuery: (resource, query) => ({
      perpage: query.perPage,
      page: query.page,
      order: query.order && `${query.order.field}-${query.order.direction}`,
      includes: includesOf(resource, query.includes),
      ...filterQuery(query.filter),
    }),
    showQuery: (resource, includes) => ({ includes: includesOf(resource, includes) }),
  })

  return {
    ...reader,

    async count(resource) {
      if (resource.service !== 'crm' || !resource.routes.count) {
        throw new Error(`${resource.name} has no count route on the CRM`)
      }
      const path = `${resource.path}/count`
      const answer = await upstream.send({ method: 'GET', path, route: `${resource.path}.count` })
      const total = (answer.body as { total_entries?: unknown } | null)?.total_entries
      const parsed = typeof total === 'string' && /^\d+$/.test(total) ? Number(total) : total
      if (typeof parsed !== 'number' || !Number.isSafeInteger(parsed) || parsed < 0) {
        throw malformed(path, answer, 'count answer has no total_entries')
      }
      return parsed
    },

    async listHooks() {
      const answer = await upstream.send({ method: 'GET', path: 'hooks', route: 'hooks.index' })
      if (!Array.isArray(answer.body)) throw malformed('hooks', answer, 'hooks index is not an array')
      return answer.body.map((item) => parseHook(item, answer))
    },

    async createHook(hook) {
      // Create bodies are wrapped like records (crm-api.md, general rule 5).
      const answer = await upstream.send({
        method: 'POST',
        path: 'hooks',
        body: { hook },
        route: 'hooks.create',
      })
      const created = hookSchema.safeParse(unwrap('hook', answer.body))
      return created.success ? created.data : null
    },

    async nestedPage(resource, id, route, query) {
      const path = `${resource.path}/${id}/${route}`
      try {
        const answer = await upstream.send({
          method: 'GET',
          path,
          query: { perpage: query.perPage, page: query.page },
          route: `${resource.path}.${route}`,
          recordScoped: true,
        })
        return { status: 'found', items: nestedItems(path, answer), fetchedAt: answer.fetchedAt }
      } catch (error) {
        if (error instanceof UpstreamGoneError) return { status: 'gone', fetchedAt: error.sentAt }
        throw error
      }
    },

    async deleteHook(id) {
      try {
        await upstream.send({ method: 'DELETE', path: `hooks/${id}`, route: 'hooks.delete' })
        return 'deleted'
      } catch (error) {
        if (error instanceof UpstreamGoneError) return 'gone'
        throw error
      }
    },
  }
}

function filterQuery(filter: IndexQuery['filter']): Query {
  const query: Query = {}
  for (const [field, operators] of Object.entries(filter ?? {})) {
    for (const [operator, value] of Object.entries(operators)) query[`filter[${field}][${operator}]`] = value
  }
  return query
}

/**
 * The items of a nested listing, whose shape the upstream does not show: an array, or an object holding
 * one (`{"historic_events": [...]}`), an empty answer or `{}` being none; each item unwrapped when it
 * is an object under a single key.
 */
function nestedItems(path: string, answer: UpstreamAnswer): unknown[] {
  let list = answer.body
  if (list === null || list === '') return []
  if (typeof list === 'object' && !Array.isArray(list)) {
    if (Object.keys(list).length === 0) return []
    const arrays = Object.values(list).filter(Array.isArray)
    if (arrays.length === 1) list = arrays[0]
  }
  if (!Array.isArray(list)) throw malformed(path, answer, 'nested listing is not an array')
  return list.map((item) => unwrap('*', item))
}

function parseHook(item: unknown, answer: UpstreamAnswer): Hook {
  const parsed = hookSchema.safeParse(unwrap('hook', item))
  if (!parsed.success)
    throw malformed('hooks', answer, `a hook is unreadable: ${parsed.error.issues[0]?.message}`)
  return parsed.data
}

function malformed(path: string, answer: UpstreamAnswer, detail: string): UpstreamResponseError {
  const line = { service: 'crm' as const, method: 'GET', path: `/api/${path}`, sentAt: answer.fetchedAt }
  return new UpstreamResponseError(line, answer.status, answer.body, detail)
}
