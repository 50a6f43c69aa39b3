// The CRM's merge and change_status routes. `POST /api/<people|companies>/{id}/merge?looser_ids=1,2`
// merges the listed records into the one in the path (merges.ts) and answers 200 without a body.
// `PUT /api/<deals|projects>/{id}/change_status`, whose parameters and answer are not shown, takes the
// new state as `current_state` (or `status`), in the query or in a JSON body (bare or under the
// record's wrapper, `{"deal": {...}}`), and answers 200 without a body, as PUT does.
import type { Context, Hono } from 'hono'
import type { CrmAccount } from './crm-account.ts'
import { capitalised, emptyOk, ID, idParam, isObject, notFound, paramMissing, unprocessable } from './http.ts'
import type { Actor } from './kind.ts'

export interface MergeStatusRouteDeps {
  account: CrmAccount
  /** API changes are made in the name of the API key's user. */
  actor: Actor
}

/** `looser_ids` as given: comma-separated, the parameter possibly repeated (also as `looser_ids[]`). */
function looserIds(c: Context): (number | null)[] | null {
  const given = [...(c.req.queries('looser_ids') ?? []), ...(c.req.queries('looser_ids[]') ?? [])]
  const parts = given.flatMap((value) => value.split(',')).map((part) => part.trim())
  const ids = parts.filter((part) => part !== '').map((part) => idParam(part))
  return ids.length ? ids : null
}

/** The state asked for: the query first, then the JSON body (bare or wrapped); undefined when none. */
async function requestedState(c: Context, wrapper: string): Promise<unknown> {
  const query = c.req.query('current_state') ?? c.req.query('status')
  if (query !== undefined) return query
  const body: unknown = await c.req.json().catch(() => undefined)
  for (const holder of isObject(body) ? [body[wrapper], body] : []) {
    if (!isObject(holder)) continue
    const state = holder.current_state ?? holder.status
    if (state !== undefined) return state
  }
  return undefined
}

export function mergeStatusRoutes(app: Hono, { account, actor }: MergeStatusRouteDeps): void {
  const missing = (c: Context, wrapper: string, id: string | undefined = c.req.param('id')) =>
    notFound(c, `${capitalised(wrapper)} with 'id'=${id}`)

  for (const plural of ['people', 'companies'] as const) {
    const { wrapper } = account.kinds[plural]
    app.post(`/api/${plural}/${ID}/merge`, (c) => {
      const ids = looserIds(c)
      if (!ids) return paramMissing(c, 'looser_ids')
      if (ids.includes(null)) return missing(c, wrapper, c.req.queries('looser_ids')?.join(','))
      const outcome = account.merge(plural, Number(c.req.param('id')), ids as number[], actor)
      if (!outcome) return missing(c, wrapper)
      return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
    })
  }

  for (const plural of ['deals', 'projects'] as const) {
    const { wrapper } = account.kinds[plural]
    app.put(`/api/${plural}/${ID}/change_status`, async (c) => {
      const state = await requestedState(c, wrapper)
      if (state === undefined) return paramMissing(c, 'current_state')
      const outcome = account.changeStatus(plural, Number(c.req.param('id')), state, actor)
      if (!outcome) return missing(c, wrapper)
      return outcome.ok ? emptyOk() : unprocessable(c, outcome.errors)
    })
  }
}
