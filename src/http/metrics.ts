// GET /metrics in the Prometheus text format. Open like /healthz (DESIGN.md): it shows counts, never
// records or secrets; keep the port off the public internet or put the route behind the proxy's auth.
import { Hono } from 'hono'
import type { Metrics } from '../metrics/index.ts'

export function createMetricsRoute(metrics: Pick<Metrics, 'scrape' | 'contentType'>): Hono {
  const app = new Hono()
  app.get('/metrics', async (c) =>
    c.body(await metrics.scrape(), 200, { 'Content-Type': metrics.contentType }),
  )
  return app
}
