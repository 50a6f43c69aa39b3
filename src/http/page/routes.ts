// The status page (docs/operations.md, "Status page"): rendered on the server, at `/`, behind
// ADMIN_TOKEN, mounted only when the admin API is. With several accounts each account has its own
// under `/accounts/<name>/` (its `basePath`), and an index of them is at `/` (accounts.ts). Its
// buttons go through the admin API's code paths (startRun, cancelRun) with `page` as who asked. Forms
// that change state are same-origin only (sign-in.ts).
import { type Context, Hono } from 'hono'
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
import type { Frame } from './layout.ts'
import { overviewPage } from './overview.ts'
import { runPage, runsPage } from './runs.ts'
import { pageDoor } from './sign-in.ts'

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
  /**
   * Where the page is: '' (the default) at the root, `/accounts/north` for one of several accounts,
   * whose pages then leave `/login` and `/logout` to the index of accounts (accounts.ts).
   */
  basePath?: string
  /** The account's name, shown on its pages; null (the default): the one account of a deployment. */
  account?: string | null
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
  const { db, runs, logger, basePath: base = '' } = deps
  const frame: Frame = { base, account: deps.account ?? null }
  const door = pageDoor(deps)
  const app = new Hono()
  const notice = (c: Context) => NOTICES[c.req.query('notice') ?? '']
  const at = (path: string) => `${base}${path}`

  // Only on the page's own paths: this app is mounted at the root beside the receiver and the admin API.
  for (const path of ['/runs', '/runs/*', '/deliveries/*']) app.use(at(path), door.sameOrigin)
  // At the root the page signs in itself; under a base path, the index of accounts does, for all.
  if (base === '') door.mountSignIn(app)
  else app.get(base, (c) => c.redirect(at('/'), 301))

  // Everything else only signed in.
  for (const path of ['/', '/runs', '/runs/*', '/deliveries', '/deliveries/*']) app.use(at(path), door.admit)
  mountDeliveryRoutes(app, db, { sendReplay: deps.sendReplay, frame })
  const jobs = mountJobsDashboard(app, door.admit, {
    databaseUrl: deps.databaseUrl,
    publicUrl: deps.publicUrl,
    base,
  })

  app.get(at('/'), async (c) => {
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
        frame,
      }),
    )
  })

  app.get(at('/runs'), async (c) => {
    const before = Number(c.req.query('before'))
    const page = await listRuns(db, Number.isInteger(before) && before > 0 ? { before } : {})
    const shown = { now: new Date(), nextBefore: page.nextBefore, notice: notice(c), frame }
    return c.html(runsPage(page.runs.map(runJson), shown))
  })

  app.get(at('/runs/:id{[0-9]+}'), async (c) => {
    const run = await readRun(db, Number(c.req.param('id')))
    if (!run)
      return c.html(runsPage([], { now: new Date(), nextBefore: null, notice: 'No such run.', frame }), 404)
    return c.html(runPage(runJson(run), { now: new Date(), notice: notice(c), frame }))
  })

  // A resync: a table (`resource`) or every table, `incremental` or `full`.
  app.post(at('/runs'), async (c) => {
    const form = await c.req.parseBody()
    const mode = form.mode === 'full' ? 'full' : 'incremental'
    const resources = typeof form.resource === 'string' && form.resource ? [form.resource] : undefined
    try {
      const result = await startRun(runs, { mode, resources, requestedBy: 'page' })
      if (result.status === 'conflict') return c.redirect(at(`/runs/${result.runId}?notice=covered`), 303)
      logger.info({ runId: result.runId, mode, resources: resources ?? 'all' }, 'resync requested')
      return c.redirect(at(`/runs/${result.runId}?notice=started`), 303)
    } catch (error) {
      if (error instanceof RunRequestError) return c.text(error.message, 400)
      throw error
    }
  })

  app.post(at('/runs/:id{[0-9]+}/cancel'), async (c) => {
    const id = Number(c.req.param('id'))
    const result = await cancelRun({ db, enqueue: runs.enqueue, logger }, id, 'page')
    if (result.status === 'unknown') return c.text(`no run ${id}`, 404)
    return c.redirect(at(`/runs/${id}?notice=${result.status}`), 303)
  })

  return { routes: app, close: jobs.close }
}
