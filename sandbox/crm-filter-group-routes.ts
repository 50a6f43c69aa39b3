// The CRM's /api/filter_groups/{id}: the members of a filter group (filter-groups.ts), each shown by the
// kind of its model type. Apart from the groups' kind: it needs the account's table of kinds, which
// holds that kind.
import type { Context, Hono } from 'hono'
import type { CrmAccount } from './crm-account.ts'
import { membersOf, PLURAL_OF } from './filter-groups.ts'
import { ID, notFound } from './http.ts'
import { parseIncludes, parseMethods } from './kind.ts'
import { pageOf, parsePaging } from './listing.ts'

const DEFAULT_PERPAGE = 25

/**
 * `GET /api/filter_groups/{id}`: the group's members, a page of them (`perpage`, `page`, capped like
 * every index), with `includes` as for the index of their type. Registered before the routes of the
 * kinds, so that it answers instead of a `show` of the group.
 */
export function filterGroupRoutes(app: Hono, deps: { account: CrmAccount; maxPerpage(): number }): void {
  const { account } = deps
  const { view } = account
  app.get(`/api/filter_groups/${ID}`, (c: Context) => {
    const group = view.store.filter_groups.rows.get(Number(c.req.param('id')))
    if (!group) return notFound(c, `FilterGroup with 'id'=${c.req.param('id')}`)
    const kind = account.kinds[PLURAL_OF[group.model_type]]
    const paging = parsePaging((name) => c.req.query(name), DEFAULT_PERPAGE, deps.maxPerpage())
    const includes = parseIncludes(c.req.query('includes'), kind.includeOptions)
    const methods = parseMethods(c.req.query('methods'))
    const page = pageOf(membersOf(view.store, group), paging)
    return c.json(page.map((row) => ({ [kind.wrapper]: kind.render(view, row, includes, methods) })))
  })
}
