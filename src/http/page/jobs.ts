// pg-boss's own dashboard (@pg-boss/dashboard) under /jobs, behind the status page's sign-in: its queues
// and jobs, with their actions (retry, cancel), rather than a view of our own. It is loaded and made on
// the first request to /jobs: a service nobody asks for it neither opens its connections nor carries
// its modules (React and React Router: 25 MB of memory, 0.14 s of start). With several accounts, each
// account's page has it under /accounts/<name>/jobs: the one queue schema, every account's queues (an
// account's named `<name>/...`); the dashboards share their pools (one per database, in its module).
import type { DashboardHandler } from '@pg-boss/dashboard/handler'
import type { Context, Hono, MiddlewareHandler } from 'hono'

export function mountJobsDashboard(
  app: Hono,
  admit: MiddlewareHandler,
  /** `base`: where the account's pages are ('' at the root); the dashboard is at `${base}/jobs`. */
  options: { databaseUrl: string; publicUrl?: string | null; base?: string },
): { close(): Promise<void> } {
  const mount = `${options.base ?? ''}/jobs`
  let handler: Promise<DashboardHandler> | undefined
  const dashboard = () => {
    handler ??= import('@pg-boss/dashboard/handler').then(({ createDashboardHandler }) =>
      createDashboardHandler({
        databases: [{ url: options.databaseUrl, name: 'crm-sync', schema: 'pgboss' }],
        basePath: mount,
        // Its forms compare the Origin's host with the request's: behind a proxy, PUBLIC_URL's host.
        ...(options.publicUrl ? { allowedActionOrigins: [new URL(options.publicUrl).host] } : {}),
      }),
    )
    return handler
  }
  const serve = async (c: Context) => (await dashboard())(c.req.raw)
  app.use(mount, admit)
  app.use(`${mount}/*`, admit)
  app.all(mount, serve)
  app.all(`${mount}/*`, serve)
  return {
    async close() {
      await (await handler)?.close()
    },
  }
}
