// The CRM service over HTTP: /api/<objects>(.json), records wrapped under their singular name.
// Routes are registered per entry of the table of kinds (kinds.ts); a record's sub-objects are in
// crm-child-routes.ts, the webhook registry in crm-hook-routes.ts, a filter group's members in
// crm-filter-group-routes.ts, merges and change_status in crm-merge-status-routes.ts, a person's
// historic events and assistants in crm-person-detail-routes.ts.
import { type Context, Hono } from 'hono'
import { getPath } from 'hono/utils/url'
import type { Clock } from './clock.ts'
import type { CrmAccount } from './crm-account.ts'
import { childRoutes } from './crm-child-routes.ts'
import { filterGroupRoutes } from './crm-filter-group-routes.ts'
import { hookRoutes } from './crm-hook-routes.ts'
import { mergeStatusRoutes } from './crm-merge-status-routes.ts'
import { personDetailRoutes } from './crm-person-detail-routes.ts'
import type { Behaviour } from './faults.ts'
import { apiGate, type GateOptions } from './gate.ts'
import {
  capitalised,
  emptyOk,
  ID,
  idParam,
  notFound,
  paramMissing,
  readWrapped,
  unprocessable,
} from './http.ts'
import type { Ids } from './ids.ts'
import {
  type Actor,
  contains,
  type Kind,
  type Outcome,
  parseIncludes,
  parseMethods,
  renderUser,
} from './kind.ts'
import { matchesFilters, pageOf, parseFilters, parseOrder, parsePaging, sortedRows } from './listing.ts'
import type { Stamped, Tagged } from './rows.ts'
import type { Store } from './store.ts'
import { utcView } from './view.ts'

export interface CrmAppOptions {
  account: CrmAccount
  store: Store
  ids: Ids
  clock: Clock
  /** The user that owns the API key: API changes are made in their name. */
  apiUserId: number
  maxPerpage(): number
  behaviour(): Behaviour
  /** The random source that orders ties anew on every request, or undefined: ties by id. */
  ties(): (() => number) | undefined
  gate: Omit<GateOptions, 'presentedKey'>
}

const DEFAULT_PERPAGE = 25
/** `.json` is optional on every path. */
const withoutJsonSuffix = (request: Request) => getPath(request).replace(/\.json$/, '')

/** The key as the real CRM takes it: `apikey` query parameter or `X-apikey` header. */
function presentedKey(c: Context): string | undefined {
  return c.req.query('apikey') ?? c.req.header('x-apikey')
}

/** A record as answers show it: under its kind's wrapper, or the key of its own (`wrapperOf`). */
const wrapped = (kind: Kind, row: Stamped, record: Record<string, unknown>) => ({
  [kind.wrapperOf?.(row) ?? kind.wrapper]: record,
})

function tagNameById(store: Store, tagId: number): string | undefined {
  for (const rows of [store.people, store.companies, store.deals, store.projects] as const) {
    for (const row of rows.rows.values()) {
      const tag = (row as Tagged).tags?.find((t) => t.id === tagId)
      if (tag) return tag.name
    }
  }
  return undefined
}

export function createCrmApp(options: CrmAppOptions): Hono {
  const { account, store } = options
  const { view } = account
  const app = new Hono({ getPath: withoutJsonSuffix })
  const actor: Actor = { userId: options.apiUserId, api: true }
  app.use('/api/*', apiGate({ ...options.gate, presentedKey }))

  /** The index rows of a kind after `order`, `filter[...]`, `tag_name`/`tag_id`, `deal_id`/`project_id`. */
  function listed(c: Context, kind: Kind): Stamped[] {
    if (kind.index) return kind.index(store, parseFilters(c.req.queries()), options.behaviour())
    const order = parseOrder(c.req.query('order'), { hyphenated: false })
    const rows = sortedRows(kind.rows(store), order, kind.sortName, options.ties())
    const filters = parseFilters(c.req.queries())
    const tagId = idParam(c.req.query('tag_id'))
    // An unknown tag id matches nothing, so it stands for a name no tag has.
    const tagName = c.req.query('tag_name') ?? (tagId ? (tagNameById(store, tagId) ?? '\u0000') : undefined)
    const members = kind.plural === 'people' ? customersOf(c) : undefined
    if (!filters.length && tagName === undefined && !members) return rows
    return rows.filter(
      (row) =>
        matchesFilters(row, filters) &&
        (tagName === undefined || Boolean((row as Tagged).tags?.some((tag) => tag.name === tagName))) &&
        (!members || members.has(row.id)),
    )
  }

  /** People only: `deal_id` or `project_id` restricts them to that deal's or project's people. */
  function customersOf(c: Context): Set<number> | undefined {
    const dealId = idParam(c.req.query('deal_id'))
    const projectId = idParam(c.req.query('project_id'))
    if (dealId) return new Set(store.deals.rows.get(dealId)?.person_ids)
    if (projectId) return new Set(store.projects.rows.get(projectId)?.person_ids)
    return undefined
  }

  function respondPage(c: Context, kind: Kind, rows: readonly Stamped[], search = false): Response {
    const paging = parsePaging((name) => c.req.query(name), DEFAULT_PERPAGE, options.maxPerpage())
    const includes = parseIncludes(c.req.query('includes'), kind.includeOptions)
    const methods = parseMethods(c.req.query('methods'))
    const shown = search ? utcView(view) : view
    const page = pageOf(rows, paging)
    return c.json(page.map((row) => wrapped(kind, row, kind.render(shown, row, includes, methods))))
  }

  function written(c: Context, kind: Kind, outcome: Outcome<Stamped>): Response {
    if (outcome.ok) return c.json(wrapped(kind, outcome.row, kind.render(view, outcome.row, new Set())), 201)
    if (outcome.status === 507)
      return c.json({ error: 'insufficient-storage', description: 'storage full' }, 507)
    return unprocessable(c, outcome.errors)
  }

  // A group's members, not the group (crm-filter-group-routes.ts): before the kinds' `show` of its path.
  filterGroupRoutes(app, { account, maxPerpage: options.maxPerpage })
  for (const kind of Object.values(account.kinds)) {
    const base = `/api/${kind.plural}`
    const missing = (c: Context) => notFound(c, `${capitalised(kind.wrapper)} with 'id'=${c.req.param('id')}`)
    app.get(base, (c) => respondPage(c, kind, listed(c, kind)))
    if (kind.model) {
      app.get(`${base}/count`, (c) => c.json({ total_entries: kind.rows(store).rows.size }))
      app.get(`${base}/stats`, (c) => {
        const rows = listed(c, kind)
        if (kind.plural !== 'deals') return c.json({ total_entries: rows.length })
        const sum = (rows as unknown as { value: string; value_type: string; value_count: string }[]).reduce(
          (total, deal) =>
            total + Number(deal.value) * (deal.value_type === 'Total' ? 1 : Number(deal.value_count)),
          0,
        )
        return c.json({ total_entries: rows.length, sum: Math.round(sum * 100) / 100, currency: 'EUR' })
      })
      app.get(`${base}/search`, (c) => {
        if (kind.searchRequires && !c.req.query(kind.searchRequires))
          return paramMissing(c, kind.searchRequires)
        const query = (name: string) => c.req.query(name)
        const order = parseOrder(c.req.query('order'), { hyphenated: false })
        const rows = sortedRows(kind.rows(store), order, kind.sortName, options.ties()).filter((row) =>
          kind.matches(row, query),
        )
        return respondPage(c, kind, rows, true)
      })
    }
    app.get(`${base}/${ID}`, (c) => {
      const row = kind.rows(store).rows.get(Number(c.req.param('id')))
      if (!row) return missing(c)
      const includes = parseIncludes(c.req.query('includes'), kind.includeOptions)
      return c.json(
        wrapped(kind, row, kind.render(view, row, includes, parseMethods(c.req.query('methods')))),
      )
    })
    if (kind.readOnly) continue
    app.post(base, async (c) => {
      const read = await readWrapped(c, kind.wrapper)
      if (!read.ok) return read.response
      return written(c, kind, account.create(kind.plural, read.body, actor))
    })
    app.on(['PUT', 'PATCH'], `${base}/${ID}`, async (c) => {
      const read = await readWrapped(c, kind.wrapper)
      if (!read.ok) return read.response
      const outcome = account.update(kind.plural, Number(c.req.param('id')), read.body, actor)
      if (!outcome) return missing(c)
      return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
    })
    app.delete(`${base}/${ID}`, (c) => {
      return account.destroy(kind.plural, Number(c.req.param('id')), actor) ? emptyOk() : missing(c)
    })
    if (!kind.attachableType) continue
    const type = kind.attachableType
    app.get(`${base}/${ID}/tasks`, (c) => {
      const id = Number(c.req.param('id'))
      if (!kind.rows(store).rows.has(id)) return missing(c)
      const order = parseOrder(c.req.query('order'), { hyphenated: false })
      const rows = sortedRows(store.tasks, order, account.kinds.tasks.sortName, options.ties())
      const own = rows.filter((task) => task.attachable_type === type && task.attachable_id === id)
      return respondPage(c, account.kinds.tasks, own)
    })
    childRoutes(app, { account, store, actor }, kind)
  }

  mergeStatusRoutes(app, { account, actor })
  personDetailRoutes(app, { account, actor, behaviour: options.behaviour })
  hookRoutes(app, options)

  app.get('/api/users', (c) => {
    const active = c.req.query('active')
    const users = [...store.users.rows.values()].filter(
      (user) => !active || active === 'false' || user.active,
    )
    const paging = parsePaging((name) => c.req.query(name), DEFAULT_PERPAGE, options.maxPerpage())
    return c.json(pageOf(users, paging).map((user) => ({ user: renderUser(user) })))
  })
  app.get('/api/users/search', (c) => {
    const name = c.req.query('name')
    if (!name) return paramMissing(c, 'name')
    const first = c.req.query('first')
    const users = [...store.users.rows.values()].filter(
      (user) => contains(user.name, name) && (!first || contains(user.first, first)),
    )
    return c.json(users.map((user) => ({ user: renderUser(user) })))
  })
  app.get('/api/tags/list', (c) => {
    const type = c.req.query('attachable_type')
    const names = new Set<string>()
    for (const kind of Object.values(account.kinds)) {
      if (!kind.attachableType || (type && type !== kind.attachableType)) continue
      for (const row of kind.rows(store).rows.values())
        for (const tag of (row as Tagged).tags ?? []) names.add(tag.name)
    }
    return c.json([...names].sort())
  })
  app.get('/api/check_connection', (c) => c.json({ success: true }))
  return app
}
