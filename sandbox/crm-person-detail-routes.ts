// The routes of a person's historic events and assistants (person-details.ts), which no include
// carries: `/api/people/{id}/historic_events` and `/api/people/{id}/assis`, items wrapped under
// `historic_event` and `assi`. Their shapes and paging are not shown: the list is paged by `page`
// (from 1) and `perpage`, at most `nestedPageSize` items a page (default 10) whatever `perpage`
// asks, and a page past the end is `[]`. Create answers 201 with the item, update and delete 200
// without a body, as the other nested routes; a body is taken wrapped or bare.
import type { Context, Hono } from 'hono'
import type { CrmAccount } from './crm-account.ts'
import type { Behaviour } from './faults.ts'
import { emptyOk, ID, isObject, notFound, readJson, unprocessable } from './http.ts'
import type { Actor } from './kind.ts'
import { pageOf, parsePaging } from './listing.ts'
import { addDetail, listDetails, removeDetail, updateDetail } from './person-detail-changes.ts'
import { DETAIL_LISTS, DETAIL_WRAPPERS, type DetailList } from './person-details.ts'

export interface PersonDetailRouteDeps {
  account: CrmAccount
  /** API changes are made in the name of the API key's user. */
  actor: Actor
  behaviour(): Behaviour
}

/** `perpage` when none is asked for: the indexes' default, unless the page size is smaller. */
const DEFAULT_PERPAGE = 25
/** How a missing item is named in a 404. */
const ITEM_NAMES: Record<DetailList, string> = { historic_events: 'HistoricEvent', assis: 'Assi' }

export function personDetailRoutes(app: Hono, { account, actor, behaviour }: PersonDetailRouteDeps): void {
  const personId = (c: Context) => Number(c.req.param('id'))
  const itemId = (c: Context) => Number(c.req.param('itemId'))
  const noPerson = (c: Context) => notFound(c, `Person with 'id'=${c.req.param('id')}`)

  for (const list of DETAIL_LISTS) {
    const path = `/api/people/${ID}/${list}`
    const itemPath = `${path}/:itemId{[0-9]+}`
    const wrapper = DETAIL_WRAPPERS[list]
    const noItem = (c: Context) => notFound(c, `${ITEM_NAMES[list]} with 'id'=${c.req.param('itemId')}`)
    /** The item of a request: under the wrapper, or the bare body. */
    const bodyItem = async (c: Context) => {
      const read = await readJson(c)
      if (!read.ok) return read
      const body = isObject(read.body) && isObject(read.body[wrapper]) ? read.body[wrapper] : read.body
      return { ok: true as const, body }
    }

    app.get(path, (c) => {
      const items = listDetails(account, personId(c), list)
      if (!items) return noPerson(c)
      const paging = parsePaging((name) => c.req.query(name), DEFAULT_PERPAGE, behaviour().nestedPageSize)
      return c.json(pageOf(items, paging).map((item) => ({ [wrapper]: item })))
    })
    app.get(itemPath, (c) => {
      const items = listDetails(account, personId(c), list)
      if (!items) return noPerson(c)
      const item = items.find((found) => found.id === itemId(c))
      return item ? c.json({ [wrapper]: item }) : noItem(c)
    })
    app.post(path, async (c) => {
      const read = await bodyItem(c)
      if (!read.ok) return read.response
      const outcome = addDetail(account, personId(c), list, read.body, actor)
      if (!outcome) return noPerson(c)
      return outcome.ok ? c.json({ [wrapper]: outcome.item }, 201) : unprocessable(c, outcome.errors)
    })
    app.on(['PUT', 'PATCH'], itemPath, async (c) => {
      const read = await bodyItem(c)
      if (!read.ok) return read.response
      if (!account.view.store.people.rows.has(personId(c))) return noPerson(c)
      const outcome = updateDetail(account, personId(c), list, itemId(c), read.body, actor)
      if (!outcome) return noItem(c)
      return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
    })
    app.delete(itemPath, (c) => {
      if (!account.view.store.people.rows.has(personId(c))) return noPerson(c)
      return removeDetail(account, personId(c), list, itemId(c), actor) ? emptyOk() : noItem(c)
    })
  }
}
