// pg-boss's own dashboard (@pg-boss/dashboard) under /jobs, behind the status page's sign-in: its queues
// and jobs, with their actions (retry, cancel), rather than a view of our own. It is made on the first
// request to /jobs, so that a service nobody asks for it opens none of its connections.
import { createDashboardHandler, type DashboardHandler } from '@pg-boss/dashboard/handler'
import type { Context, Hono, MiddlewareHandler } from 'hono'

const BASE = '/jobs'

export function mountJobsDashboard(
  app: Hono,
  admit: MiddlewareHandler,
  options: { databaseUrl: string; publicUrl?: string | null },
): { close(): Promise<void> } {
  let handler: DashboardHandler | undefined
  const dashboard = () => {
    handler ??= createDashboardHandler({
      databases: [{ url: options.databaseUrl, name: 'crm-sync', schema: 'pgboss' }],
      basePath: BASE,
      // Its forms compare the Origin's host with the request's: behind a proxy, PUBLIC_URL's host.
      ...(options.publicUrl ? { allowedActionOrigins: [new URL(options.publicUrl).host] } : {}),
    })
    return handler
  }
  const serve = (c: Context) => dashboard()(c.req.raw)
  app.use(BASE, admit)
  app.use(`${BASE}/*`, admit)
  app.all(BASE, serve)
  app.all(`${BASE}/*`, serve)
  return {
    async close() {
      await handler?.close()
    },
  }
}
