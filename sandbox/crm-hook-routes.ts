// The CRM's /api/hooks: the registry of webhooks, as an API client manages it.
import type { Context, Hono } from 'hono'
import { type Clock, nowSeconds } from './clock.ts'
import type { CrmAccount } from './crm-account.ts'
import { hookInput, renderHook } from './hooks.ts'
import { emptyOk, fieldErrors, ID, isObject, notFound, readJson, unprocessable } from './http.ts'
import type { Ids } from './ids.ts'
import type { HookRow } from './rows.ts'
import { insert, remove, type Store } from './store.ts'

/** What the routes use of the CRM app's options (crm.ts). */
export interface HookRouteDeps {
  account: CrmAccount
  store: Store
  ids: Ids
  clock: Clock
}

export function hookRoutes(app: Hono, options: HookRouteDeps): void {
  const { store, account } = options
  const { view } = account
  const missing = (c: Context) => notFound(c, `Hook with 'id'=${c.req.param('id')}`)
  const hookOf = (c: Context) => store.hooks.rows.get(Number(c.req.param('id')))
  /** The fields, wrapped under `hook` or bare: the spec does not say which. */
  const fieldsOf = (body: unknown) => (isObject(body) && isObject(body.hook) ? body.hook : body)

  app.get('/api/hooks', (c) =>
    c.json([...store.hooks.rows.values()].map((hook) => ({ hook: renderHook(view, hook) }))),
  )
  app.get(`/api/hooks/${ID}`, (c) => {
    const hook = hookOf(c)
    return hook ? c.json({ hook: renderHook(view, hook) }) : missing(c)
  })
  app.post('/api/hooks', async (c) => {
    const read = await readJson(c)
    if (!read.ok) return read.response
    const fields = fieldsOf(read.body)
    const parsed = hookInput.safeParse(fields)
    if (!parsed.success) return unprocessable(c, fieldErrors(parsed.error, fields))
    const now = nowSeconds(options.clock)
    const hook: HookRow = {
      id: options.ids.next('hook'),
      ...parsed.data,
      includes: parsed.data.includes ?? null,
      filter_group_id: parsed.data.filter_group_id ?? null,
      verified: false,
      failed: 0,
      failed_at: null,
      created_at: now,
      updated_at: now,
    }
    insert(store.hooks, hook)
    return c.json({ hook: renderHook(view, hook) }, 201)
  })
  app.on(['PUT', 'PATCH'], `/api/hooks/${ID}`, async (c) => {
    const hook = hookOf(c)
    if (!hook) return missing(c)
    const read = await readJson(c)
    if (!read.ok) return read.response
    const fields = fieldsOf(read.body)
    const parsed = hookInput.partial().safeParse(fields)
    if (!parsed.success) return unprocessable(c, fieldErrors(parsed.error, fields))
    for (const [key, value] of Object.entries(parsed.data)) {
      if (value !== undefined) Object.assign(hook, { [key]: value })
    }
    hook.updated_at = nowSeconds(options.clock)
    return emptyOk()
  })
  app.delete(`/api/hooks/${ID}`, (c) => {
    if (!hookOf(c)) return missing(c)
    remove(store.hooks, Number(c.req.param('id')), nowSeconds(options.clock))
    return emptyOk()
  })
}
