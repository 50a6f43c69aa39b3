// GET /metrics in the Prometheus text format. Open like /healthz (DESIGN.md): it shows counts, never
// records or secrets; keep the port off the public internet or put the route behind the proxy's auth.
// With METRICS_REQUIRE_TOKEN it asks for the admin token instead (a scraper's `authorization` with
// `credentials`), for a port that others can reach.
import { Hono } from 'hono'
import type { Metrics } from '../metrics/index.ts'
import { secretMatcher } from '../receiver/secret.ts'

export interface MetricsRouteOptions {
  /** When set, a scrape must carry `Authorization: Bearer <token>` (ADMIN_TOKEN). */
  token?: string | null
}

export function createMetricsRoute(
  metrics: Pick<Metrics, 'scrape' | 'contentType'>,
  { token }: MetricsRouteOptions = {},
): Hono {
  const app = new Hono()
  const matchesToken = token ? secretMatcher(token) : null
  app.get('/metrics', async (c) => {
    if (matchesToken) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1]
      if (!matchesToken(presented)) {
        return c.json({ error: 'unauthorized: send Authorization: Bearer <ADMIN_TOKEN>' }, 401, {
          'WWW-Authenticate': 'Bearer realm="crm-sync metrics"',
        })
      }
    }
    return c.body(await metrics.scrape(), 200, { 'Content-Type': metrics.contentType })
  })
  return app
}
