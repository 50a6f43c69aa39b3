// The HTTP surface of several accounts (ACCOUNTS_FILE, docs/accounts.md): the admin API answers for
// the account that `?account=` names, and /metrics holds every account's metrics, each labelled with
// its account. Each account's receiver is mounted at `/accounts/<name>/webhooks/...` (account.ts).
import { Hono } from 'hono'
import { AggregatorRegistry, collectDefaultMetrics, Registry } from 'prom-client'
import type { Metrics } from '../metrics/index.ts'

interface AdminOfAccount {
  name: string | null
  admin: Hono | null
}

/** `/admin/*` of the account named by `?account=`; a request that names none or another is refused. */
export function adminByAccount(accounts: readonly AdminOfAccount[]): Hono | null {
  const apps = new Map(accounts.flatMap(({ name, admin }) => (name && admin ? [[name, admin] as const] : [])))
  if (apps.size === 0) return null
  const names = [...apps.keys()].join(', ')
  const app = new Hono()
  const dispatch = (path: string) =>
    app.all(path, (c) => {
      const account = c.req.query('account')
      const target = account === undefined ? undefined : apps.get(account)
      if (target) return target.fetch(c.req.raw, c.env)
      const error =
        account === undefined
          ? `name the account with ?account=: one of ${names}`
          : `no account is named ${account.slice(0, 40)}: one of ${names}`
      return c.json({ error }, account === undefined ? 400 : 404)
    })
  dispatch('/admin')
  dispatch('/admin/*')
  return app
}

/** The metrics of every account in one exposition, and the process's own (CPU, memory, GC) once. */
export function combinedMetrics(accounts: readonly Metrics[]): Pick<Metrics, 'scrape' | 'contentType'> {
  const processRegistry = new Registry()
  collectDefaultMetrics({ register: processRegistry })
  return {
    contentType: processRegistry.contentType,
    async scrape() {
      await Promise.all(accounts.map((metrics) => metrics.collect()))
      const all = await Promise.all(
        [processRegistry, ...accounts.map((metrics) => metrics.registry)].map((registry) =>
          registry.getMetricsAsJSON(),
        ),
      )
      // Every account's series carry its own `account` label, so that no two are summed together.
      return AggregatorRegistry.aggregate(all).metrics()
    },
  }
}
