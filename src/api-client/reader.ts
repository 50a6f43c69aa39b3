// Reading resources of the table in src/resources: index pages, every page, and show. The two clients
// differ only in how they spell their queries and whether records come wrapped.
import type { Logger } from '../log.ts'
import { idOf, type Resource } from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import { BUDGET_FLOOR_SHARE, type Budget, createBudget } from './budget.ts'
import { type Clock, systemClock } from './clock.ts'
import { type RejectedRecordError, type Service, UpstreamGoneError, UpstreamResponseError } from './errors.ts'
import { createUpstream, type Query, type Upstream } from './http.ts'
import type { UpstreamMetrics } from './metrics.ts'
import { paginate } from './paging.ts'
import { type Drift, type FetchedRecord, parseRecord, parseRecords, unwrap } from './records.ts'

export interface ClientSettings {
  baseUrl: string
  apiKey: string
  /** Further secrets that must never reach an error (the webhook secret, the admin token). */
  secrets?: readonly string[]
  /** Requests the upstream allows per window, summed over every replica. */
  requests: number
  windowSeconds: number
  timeoutSeconds: number
  maxRetries: number
  /** `perpage` asked for; the upstream may answer with less. */
  pageSize: number
  maxPages: number
}

export interface ClientDeps {
  db: Db
  logger: Logger
  metrics: UpstreamMetrics
  clock?: Clock
  random?: () => number
  /** Key of the shared budget; the service name unless a test needs one of its own. */
  budgetKey?: string
  /** A budget in place of the shared one (`crm-sync check` on a database not yet migrated). */
  budget?: Budget
  /** Once aborted (a sweep's job stopped), a request in flight is cut off and none is sent (RequestAborted). */
  signal?: AbortSignal
}

export interface Order {
  field: 'updated_at' | 'created_at' | 'name'
  direction: 'asc' | 'desc'
}

export interface IndexQuery {
  /** 1-based. */
  page?: number
  perPage?: number
  order?: Order
  /** Sub-objects to include; the resource's includes when not given. */
  includes?: readonly string[]
  /** CRM only: `{ updated_at: { larger_than: '2024-01-01T00:00:00Z' } }` → `filter[updated_at][larger_than]=...`. */
  filter?: Record<string, Record<string, string | number>>
}

export interface PagesQuery extends Omit<IndexQuery, 'page'> {
  /** The resource's count taken before the walk, when known: bounds the pages fetched. */
  total?: number | null
}

export interface RecordPage {
  page: number
  /** Items the upstream sent, usable or not. */
  size: number
  records: FetchedRecord[]
  /** Items the sync cannot use (no id, unparsable updated_at), each naming resource, id and field. */
  rejected: RejectedRecordError[]
  /** When the request for this page was sent. */
  fetchedAt: Date
  /** Milliseconds from sending the request to its answer (the wait for the budget not counted). */
  tookMs?: number
}

export type ShowResult =
  | { status: 'found'; record: FetchedRecord; fetchedAt: Date }
  /** 404: the record is deleted upstream (the sync tombstones it). */
  | { status: 'gone'; fetchedAt: Date }

export interface ResourceReader {
  index(resource: Resource, query?: IndexQuery): Promise<RecordPage>
  pages(resource: Resource, query?: PagesQuery): AsyncGenerator<RecordPage>
  /** By a numeric id: the resources with text ids (attachments) have no show route. */
  show(resource: Resource, id: number, options?: { includes?: readonly string[] }): Promise<ShowResult>
}

/** The upstream behind a client: its own budget (shared with the other replicas) and request core. */
export function openUpstream(
  service: Service,
  settings: ClientSettings,
  deps: ClientDeps,
  authorize: (url: URL, headers: Headers) => void,
): Upstream {
  const clock = deps.clock ?? systemClock
  const windowMs = settings.windowSeconds * 1000
  const timeoutMs = settings.timeoutSeconds * 1000
  const budget =
    deps.budget ??
    createBudget({
      db: deps.db,
      key: deps.budgetKey ?? service,
      service,
      requests: settings.requests,
      // The CRM publishes its limit; the reservation service does not, so its budget learns from 429s.
      floor:
        service === 'crm'
          ? settings.requests
          : Math.max(1, Math.ceil(settings.requests * BUDGET_FLOOR_SHARE)),
      windowMs,
      requestTimeoutMs: timeoutMs,
      clock,
      metrics: deps.metrics,
      logger: deps.logger,
    })
  return createUpstream(
    {
      service,
      baseUrl: settings.baseUrl,
      authorize,
      secrets: [settings.apiKey, ...(settings.secrets ?? [])],
      timeoutMs,
      maxRetries: settings.maxRetries,
      // Without a Retry-After, one whole window is sure to have passed.
      defaultPauseMs: windowMs,
    },
    { budget, clock, logger: deps.logger, metrics: deps.metrics, random: deps.random, signal: deps.signal },
  )
}

export interface ReaderOptions {
  upstream: Upstream
  settings: ClientSettings
  logger: Logger
  /** The index query in the upstream's spelling. */
  indexQuery(resource: Resource, query: IndexQuery & { page: number; perPage: number }): Query
  showQuery(resource: Resource, includes: readonly string[] | undefined): Query
  /**
   * Another way of asking for the order (the reservation service's spelling of `order`), learnt from
   * the answers: `tryOther` switches to it when it has not been tried, and `keep` settles on the way
   * that gave pages in order (or back on the first when neither did).
   */
  orderSpelling?: { tryOther(): boolean; keep(inOrder: boolean): void }
}

export function createReader(options: ReaderOptions): ResourceReader {
  const { upstream, settings, logger } = options
  const warned = new Set<string>()
  const warnOnce = (key: string, fields: Record<string, unknown>, message: string) => {
    if (warned.has(key)) return
    warned.add(key)
    logger.warn({ upstream: upstream.service, ...fields }, message)
  }
  const onDrift = (drift: Drift) =>
    warnOnce(
      `${drift.resource}.${drift.field}`,
      { resource: drift.resource, id: drift.id, field: drift.field, valueType: typeof drift.value },
      'upstream sent a value its mirror column cannot hold; the row gets null there, _raw keeps it',
    )

  const check = (resource: Resource, route: 'show' | 'index') => {
    if (resource.service !== upstream.service) {
      throw new Error(`${resource.name} is not a resource of the ${upstream.service} service`)
    }
    if (route === 'show' && !resource.routes.show) throw new Error(`${resource.name} has no show route`)
  }

  async function fetchPage(resource: Resource, query: IndexQuery, page: number) {
    const answer = await upstream.send({
      method: 'GET',
      path: resource.path,
      query: options.indexQuery(resource, {
        ...query,
        page,
        perPage: query.perPage ?? resource.perPage ?? settings.pageSize,
      }),
      // A group's pages (`filter_groups/7`): one route, whatever the id.
      route: `${resource.path.replace(/\/\d+(?=\/|$)/g, '/:id')}.index`,
      // Attachments' files: never held whole (discard.ts); parseRecord drops the keys either way.
      discard: resource.discard,
    })
    if (!Array.isArray(answer.body)) {
      throw new UpstreamResponseError(
        { service: upstream.service, method: 'GET', path: `/api/${resource.path}`, sentAt: answer.fetchedAt },
        answer.status,
        // A resource that discards keys (attachments' `data`) keeps no answer it could not parse.
        resource.discard?.length ? '(not kept: it may hold what this resource discards)' : answer.body,
        'index answer is not an array',
      )
    }
    const items = answer.body.map((item) => unwrap(resource.wrapper, item))
    return { answer, items, ...parseRecords(resource, items, onDrift) }
  }

  async function index(resource: Resource, query: IndexQuery = {}): Promise<RecordPage> {
    check(resource, 'index')
    const page = query.page ?? 1
    let fetched = await fetchPage(resource, query, page)
    const order = query.order?.field === 'updated_at' ? query.order : undefined
    const spelling = options.orderSpelling
    if (order && spelling && distinctTimes(fetched.records) > 1) {
      // A page out of order may be the upstream ignoring a spelling of `order` it does not parse.
      let inOrderNow = inOrder(fetched.records, order.direction)
      if (!inOrderNow && spelling.tryOther()) {
        fetched = await fetchPage(resource, query, page)
        inOrderNow = inOrder(fetched.records, order.direction)
        if (inOrderNow)
          logger.info(
            { upstream: upstream.service },
            'upstream orders pages by the other spelling of order; using it',
          )
      }
      spelling.keep(inOrderNow)
    }
    const { answer, items, records, rejected } = fetched
    if (order && !inOrder(records, order.direction)) {
      warnOnce(
        `${resource.name}.order`,
        { resource: resource.name, page },
        'upstream did not order the page by updated_at as asked; walks read every page',
      )
    }
    return { page, size: items.length, records, rejected, fetchedAt: answer.fetchedAt, tookMs: answer.tookMs }
  }

  return {
    index,

    pages(resource, query = {}) {
      const { total, ...rest } = query
      return paginate((page) => index(resource, { ...rest, page }), {
        total,
        maxPages: settings.maxPages,
        idOf: (record) => idOf(resource, record),
      })
    },

    async show(resource, id, showOptions = {}) {
      check(resource, 'show')
      try {
        const answer = await upstream.send({
          method: 'GET',
          path: `${resource.path}/${id}`,
          query: options.showQuery(resource, showOptions.includes),
          route: `${resource.path}.show`,
        })
        const record = parseRecord(resource, unwrap(resource.wrapper, answer.body), onDrift)
        return { status: 'found', record, fetchedAt: answer.fetchedAt }
      } catch (error) {
        if (error instanceof UpstreamGoneError) return { status: 'gone', fetchedAt: error.sentAt }
        throw error
      }
    },
  }
}

function distinctTimes(records: FetchedRecord[]): number {
  return new Set(records.map((record) => record.updated_at)).size
}

function inOrder(records: FetchedRecord[], direction: 'asc' | 'desc'): boolean {
  const times = records
    .map((record) => Date.parse(record.updated_at ?? ''))
    .filter((time) => !Number.isNaN(time))
  return times.every((time, i) => {
    const before = times[i - 1]
    return i === 0 || before === undefined || (direction === 'desc' ? before >= time : before <= time)
  })
}
