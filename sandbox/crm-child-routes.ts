// The CRM's routes of a record's sub-objects: /api/<plural>/:id/tags and /addrs (people and
// companies have addresses, deals and projects tags only) and /contact_details.
import type { Context, Hono } from 'hono'
import type { ChildName, CrmAccount } from './crm-account.ts'
import { capitalised, emptyOk, ID, notFound, readWrapped, unprocessable } from './http.ts'
import type { Actor, Kind } from './kind.ts'
import type { Store } from './store.ts'

export interface ChildRouteDeps {
  account: CrmAccount
  store: Store
  /** API changes are made in the name of the API key's user. */
  actor: Actor
}

/** Sub-object routes of an attachable kind. */
export function childRoutes(app: Hono, deps: ChildRouteDeps, kind: Kind): void {
  const { account, store } = deps
  const { view } = account
  const base = `/api/${kind.plural}`
  const missing = (c: Context) => notFound(c, `${capitalised(kind.wrapper)} with 'id'=${c.req.param('id')}`)
  const childNames: ChildName[] =
    kind.plural === 'people' || kind.plural === 'companies' ? ['tags', 'addrs'] : ['tags']
  for (const child of childNames) childItemRoutes(app, deps, kind, child)
  if (childNames.length === 2) {
    app.get(`${base}/${ID}/contact_details`, (c) => {
      const row = kind.rows(store).rows.get(Number(c.req.param('id')))
      if (!row) return missing(c)
      const record = kind.render(view, row, new Set(['tels', 'emails', 'homepages']))
      const wrapped = (key: string, singular: string) =>
        ((record[key] ?? []) as unknown[]).map((detail) => ({ [singular]: detail }))
      return c.json([
        ...wrapped('tels', 'tel'),
        ...wrapped('emails', 'email'),
        ...wrapped('homepages', 'homepage'),
      ])
    })
  }
}

function childItemRoutes(app: Hono, { account, actor }: ChildRouteDeps, kind: Kind, child: ChildName): void {
  const path = `/api/${kind.plural}/${ID}/${child}`
  const singular = child === 'tags' ? 'tag' : 'addr'
  const parentId = (c: Context) => Number(c.req.param('id'))
  const childId = (c: Context) => Number(c.req.param('childId'))
  const missing = (c: Context) => notFound(c, `${capitalised(singular)}`)
  app.get(path, (c) => {
    const list = account.children(kind.plural, parentId(c), child)
    return list ? c.json(list.map((item) => ({ [singular]: item }))) : missing(c)
  })
  app.get(`${path}/:childId{[0-9]+}`, (c) => {
    const item = account.children(kind.plural, parentId(c), child)?.find((i) => i.id === childId(c))
    return item ? c.json({ [singular]: item }) : missing(c)
  })
  app.post(path, async (c) => {
    const read = await readWrapped(c, singular)
    if (!read.ok) return read.response
    const outcome = account.addChild(kind.plural, parentId(c), child, read.body, actor)
    if (!outcome) return missing(c)
    if (!outcome.ok) return unprocessable(c, outcome.errors)
    return c.json({ [singular]: account.renderChild(kind.plural, parentId(c), outcome.child) }, 201)
  })
  app.on(['PUT', 'PATCH'], `${path}/:childId{[0-9]+}`, async (c) => {
    const read = await readWrapped(c, singular)
    if (!read.ok) return read.response
    const outcome = account.updateChild(kind.plural, parentId(c), child, childId(c), read.body, actor)
    if (!outcome) return missing(c)
    return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
  })
  app.delete(`${path}/:childId{[0-9]+}`, (c) =>
    account.removeChild(kind.plural, parentId(c), child, childId(c), actor) ? emptyOk() : missing(c),
  )
}
