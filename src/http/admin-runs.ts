// The runs in the admin API: the list (`GET /admin/runs`), one run (`GET /admin/runs/:id`) and its
// cancellation (`POST /admin/runs/:id/cancel`). Mounted behind the admin token by admin.ts.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { Logger } from '../log.ts'
import { findResource } from '../resources/index.ts'
import { cancelRun, listRuns, MAX_RUN_PAGE, runJson, runPageJson } from '../status/run-history.ts'
import type { Db } from '../store/database.ts'
import { readRun } from '../store/runs.ts'
import type { RunDeps } from '../sync/runs.ts'

export interface RunRoutesDeps {
  db: Db
  runs: RunDeps
  logger: Logger
}

// Bounded to what a JavaScript number holds exactly; run ids are far below it.
const RUN_ID = /^[1-9]\d{0,14}$/

const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const

const runListQuery = z.strictObject(
  {
    limit: z
      .string()
      .regex(/^\d+$/, `must be a whole number from 1 to ${MAX_RUN_PAGE}`)
      .transform(Number)
      .pipe(z.number().min(1, 'must be 1 or more').max(MAX_RUN_PAGE, `must be ${MAX_RUN_PAGE} or less`))
      .optional(),
    before: z
      .string()
      .regex(RUN_ID, 'must be a run id (a positive whole number)')
      .transform(Number)
      .optional(),
    status: z
      .string()
      .transform((value) => value.split(','))
      .pipe(z.array(z.enum(RUN_STATUSES, `must be ${RUN_STATUSES.join(', ')} (or several, comma-separated)`)))
      .optional(),
    resource: z
      .string()
      .refine((name) => findResource(name) !== undefined, 'must name a resource such as crm.people')
      .optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown parameter ${issue.keys.map((key) => `"${key}"`).join(', ')}; the list takes limit, before, status and resource`
        : undefined,
  },
)

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length ? `${String(issue.path[0])} ${issue.message}` : issue.message))
    .join('; ')
}

const badRunId = (id: string) => ({ error: `run id must be a positive whole number, got "${id}"` })

export function mountRunRoutes(app: Hono, { db, runs, logger }: RunRoutesDeps): void {
  app.get('/admin/runs', async (c) => {
    const repeated = Object.entries(c.req.queries()).find(([, values]) => values.length > 1)
    if (repeated) return c.json({ error: `parameter "${repeated[0]}" is given more than once` }, 400)
    const parsed = runListQuery.safeParse(c.req.query())
    if (!parsed.success) return c.json({ error: describeIssues(parsed.error) }, 400)
    const { limit, before, status, resource } = parsed.data
    return c.json(runPageJson(await listRuns(db, { limit, before, statuses: status, resource })))
  })

  app.get('/admin/runs/:id', async (c) => {
    const id = c.req.param('id')
    if (!RUN_ID.test(id)) return c.json(badRunId(id), 400)
    const run = await readRun(db, Number(id))
    if (!run) return c.json({ error: `no run ${id}` }, 404)
    return c.json(runJson(run))
  })

  app.post('/admin/runs/:id/cancel', async (c) => {
    const id = c.req.param('id')
    if (!RUN_ID.test(id)) return c.json(badRunId(id), 400)
    const result = await cancelRun({ db, enqueue: runs.enqueue, logger }, Number(id), 'admin')
    if (result.status === 'unknown') return c.json({ error: `no run ${id}` }, 404)
    if (result.status === 'finished') {
      return c.json(
        { error: `run ${id} has already finished (${result.run.status})`, run: runJson(result.run) },
        409,
      )
    }
    return c.json(runJson(result.run))
  })
  app.on(['GET', 'PUT', 'PATCH', 'DELETE'], '/admin/runs/:id/cancel', (c) =>
    c.json({ error: 'method not allowed; POST to cancel the run' }, 405, { Allow: 'POST' }),
  )
}
