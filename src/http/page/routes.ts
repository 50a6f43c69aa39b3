// The status page (docs/operations.md, "Status page"): rendered on the server, at `/`, behind
// ADMIN_TOKEN, mounted only when the admin API is. Its buttons go through the admin API's code paths
// (startRun, cancelRun) with `page` as who asked. Forms that change state are same-origin only: the
// session cookie is SameSite=Strict, and hono's csrf middleware refuses a form posted from another
// origin (PUBLIC_URL's origin counts as this one, for a page served behind a proxy).
import { type Context, Hono } from 'hono'
import { csrf } from 'hono/csrf'
import type { Logger } from '../../log.ts'
import type { Status } from '../../status/engine-status.ts'
import { cancelRun, listRuns, runJson } from '../../status/run-history.ts'
import { readBudgetUse } from '../../store/budget.ts'
import type { Db } from '../../store/database.ts'
import { readRun } from '../../store/runs.ts'
import { readNewestChanges } from '../../store/status-queries.ts'
import { mirroredResources, type RunDeps, RunRequestError, startRun } from '../../sync/runs.ts'
import { type DeliveryRoutesOptions, mountDeliveryRoutes } from './delivery-routes.ts'
import { mountJobsDashboard } from './jobs.ts'
import { loginPage } from './login.ts'
import { overviewPage } from './overview.ts'
import { runPage, runsPage } from './runs.ts'
import { pageSession } from './session.ts'

export interface StatusPageDeps {
  token: string
  db: Db
  runs: RunDeps
  status: () => Promise<Status>
  /** What /readyz reports of the hooks. */
  hooks: () => unknown
  /** Why an upstream refused the API key, by service (what /readyz reports as upstream_keys). */
  refusedKeys: () => Map<string, string>
  intervalSeconds: number
  publicUrl?: string | null
  /** Sends the job of a replay of deliveries (delivery-routes.ts); without it the page offers none. */
  sendReplay?: DeliveryRoutesOptions['sendReplay']
  /** The database of the job queue, for pg-boss's own dashboard under /jobs. */
  databaseUrl: string
  logger: Logger
}

export interface StatusPage {
  routes: Hono
  /** Closes what /jobs opened (its pools), if it was ever visited. */
  close(): Promise<void>
}

const NOTICES: Record<string, string> = {
  started: 'Run started.',
  covered: 'Those tables are being swept already: this is the run that sweeps them.',
  cancelled: 'Run cancelled.',
  finished: 'The run had finished already.',
}

export function createStatusPage(deps: StatusPageDeps): StatusPage {
  const { db, runs, logger } = deps
  const session = pageSession(deps.token)
  const publicOrigin = deps.publicUrl ? new URL(deps.publicUrl).origin : null
  const app = new Hono()
  const notice = (c: Context) => NOTICES[c.req.query('notice') ?? '']

  // Only on the page's own paths: this app is mounted at the root beside the receiver and the admin API.
  const sameOrigin = csrf({
    origin: (origin, c) => origin === new URL(c.req.url).origin || origin === publicOrigin,
  })
  for (const path of ['/login', '/logout', '/runs', '/runs/*', '/deliveries/*']) app.use(path, sameOrigin)
  app.get('/login', (c) => (session.admitted(c) ? c.redirect('/', 303) : c.html(loginPage())))
  app.post('/login', async (c) => {
    const form = await c.req.parseBody()
    if (!session.tokenMatches(typeof form.token === 'string' ? form.token : undefined)) {
      logger.warn('status page: sign-in with a wrong token')
      return c.html(loginPage({ failed: true }), 401)
    }
    session.signIn(c)
    return c.redirect('/', 303)
  })
  app.post('/logout', (c) => {
    session.signOut(c)
    return c.redirect('/login', 303)
  })

  // Everything else only signed in: a browser is sent to the form, any other client gets a 401.
  const admit = async (c: Context, next: () => Promise<void>) => {
    if (session.admitted(c)) return next()
    if ((c.req.header('accept') ?? '').includes('text/html')) return c.redirect('/login', 303)
    return c.json(
      { error: 'unauthorized: sign in at /login, or send Authorization: Bearer <ADMIN_TOKEN>' },
      401,
    )
  }
  app.use('/', admit)
  app.use('/runs', admit)
  app.use('/runs/*', admit)
  app.use('/deliveries', admit)
  app.use('/deliveries/*', admit)
  mountDeliveryRoutes(app, db, { sendReplay: deps.sendReplay })
  const jobs = mountJobsDashboard(app, admit, { databaseUrl: deps.databaseUrl, publicUrl: deps.publicUrl })

  app.get('/', async (c) => {
    const status = await deps.status()
    const [newest, budgets] = await Promise.all([
      readNewestChanges(db, mirroredResources(runs)),
      readBudgetUse(db),
    ])
    return c.html(
      overviewPage({
        status,
        newest,
        budgets,
        refusedKeys: deps.refusedKeys(),
        intervalSeconds: deps.intervalSeconds,
        hooks: deps.hooks(),
        now: new Date(),
        notice: notice(c),
      }),
    )
  })

  app.get('/runs', async (c) => {
    const before = Number(c.req.query('before'))
    const page = await listRuns(db, Number.isInteger(before) && before > 0 ? { before } : {})
    const shown = { now: new Date(), nextBefore: page.nextBefore, notice: notice(c) }
    return c.html(runsPage(page.runs.map(runJson), shown))
  })

  app.get('/runs/:id{[0-9]+}', async (c) => {
    const run = await readRun(db, Number(c.req.param('id')))
    if (!run) return c.html(runsPage([], { now: new Date(), nextBefore: null, notice: 'No such run.' }), 404)
    return c.html(runPage(runJson(run), { now: new Date(), notice: notice(c) }))
  })

  // A resync: a table (`resource`) or every table, `incremental` or `full`.
  app.post('/runs', async (c) => {
    const form = await c.req.parseBody()
    const mode = form.mode === 'full' ? 'full' : 'incremental'
    const resources = typeof form.resource === 'string' && form.resource ? [form.resource] : undefined
    try {
      const result = await startRun(runs, { mode, resources, requestedBy: 'page' })
      if (result.status === 'conflict') return c.redirect(`/runs/${result.runId}?notice=covered`, 303)
      logger.info({ runId: result.runId, mode, resources: resources ?? 'all' }, 'resync requested')
      return c.redirect(`/runs/${result.runId}?notice=started`, 303)
    } catch (error) {
      if (error instanceof RunRequestError) return c.text(error.message, 400)
      throw error
    }
  })

  app.post('/runs/:id{[0-9]+}/cancel', async (c) => {
    const id = Number(c.req.param('id'))
    const result = await cancelRun({ db, enqueue: runs.enqueue, logger }, id, 'page')
    if (result.status === 'unknown') return c.text(`no run ${id}`, 404)
    return c.redirect(`/runs/${id}?notice=${result.status}`, 303)
  })

  return { routes: app, close: jobs.close }
}
