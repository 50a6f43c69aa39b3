// The admin API (DESIGN.md, outside contract): force a resync, list, follow and cancel runs
// (admin-runs.ts), read the status.
// Mounted only when ADMIN_TOKEN is set, so without it every /admin path is a plain 404. Bad input is
// a 400 that names the problem, never a 500.
import { type Context, Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { z } from 'zod'
import type { Logger } from '../log.ts'
import type { Status } from '../status/engine-status.ts'
import type { Db } from '../store/database.ts'
import { type RunDeps, RunRequestError, startRun } from '../sync/runs.ts'
import { mountRunRoutes } from './admin-runs.ts'
import { carriesToken } from './bearer.ts'

export interface AdminDependencies {
  /** ADMIN_TOKEN: requests carry it as `Authorization: Bearer <token>`. */
  token: string
  db: Db
  runs: RunDeps
  status: () => Promise<Status>
  logger: Logger
}

const ADMIN_BODY_LIMIT = 64 * 1024

const resyncRequest = z.strictObject(
  {
    resources: z
      .array(
        z.string('must be a resource name (a string such as "crm.people")'),
        'must be a list of resource names',
      )
      .optional(),
    mode: z.enum(['full', 'incremental'], 'must be "full" or "incremental"').optional(),
  },
  {
    error: (issue) => {
      if (issue.code === 'invalid_type') return 'the body must be a JSON object'
      if (issue.code === 'unrecognized_keys') {
        const keys = issue.keys.map((key) => `"${key}"`).join(', ')
        return `unknown key ${keys}; a resync takes "resources" and "mode"`
      }
      return undefined
    },
  },
)

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length ? `${issue.path.join('.')} ${issue.message}` : issue.message))
    .join('; ')
}

async function readJsonBody(c: Context): Promise<{ ok: true; value: unknown } | { ok: false }> {
  const text = await c.req.text()
  if (text.trim() === '') return { ok: true, value: {} } // `curl -X POST` without a body asks for the defaults
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

export function createAdminApi({ token, db, runs, status, logger }: AdminDependencies): Hono {
  const app = new Hono()

  // Before routing: a wrong token learns nothing, not even which admin paths exist.
  const authorize = async (c: Context, next: () => Promise<void>) => {
    if (!carriesToken(c, token)) {
      return c.json({ error: 'unauthorized: send Authorization: Bearer <ADMIN_TOKEN>' }, 401, {
        'WWW-Authenticate': 'Bearer realm="crm-sync admin"',
      })
    }
    await next()
  }
  app.use('/admin', authorize)
  app.use('/admin/*', authorize)

  app.post(
    '/admin/resync',
    bodyLimit({
      maxSize: ADMIN_BODY_LIMIT,
      onError: (c) => c.json({ error: `the body exceeds ${ADMIN_BODY_LIMIT} bytes` }, 413),
    }),
    async (c) => {
      const body = await readJsonBody(c)
      if (!body.ok) return c.json({ error: 'the body is not valid JSON' }, 400)
      const parsed = resyncRequest.safeParse(body.value)
      if (!parsed.success) return c.json({ error: describeIssues(parsed.error) }, 400)
      const { resources, mode = 'incremental' } = parsed.data
      let result: Awaited<ReturnType<typeof startRun>>
      try {
        result = await startRun(runs, { mode, resources, requestedBy: 'admin' })
      } catch (error) {
        if (error instanceof RunRequestError) return c.json({ error: error.message }, 400)
        throw error
      }
      if (result.status === 'conflict') {
        const what = mode === 'full' ? 'a full run' : 'a run that has not started yet'
        return c.json(
          {
            error: `${what} of these resources is already queued or running: run ${result.runId} (follow it at /admin/runs/${result.runId})`,
            run_id: result.runId,
            resource: result.resource,
          },
          409,
          { Location: `/admin/runs/${result.runId}` },
        )
      }
      const { runId, covered, waiting } = result
      logger.info({ runId, mode, resources: resources ?? 'all', covered, waiting }, 'resync requested')
      const accepted = {
        run_id: runId,
        ...(covered.length
          ? { covered: covered.map((entry) => ({ resource: entry.resource, run_id: entry.runId })) }
          : {}),
        ...(waiting.length ? { waiting } : {}),
      }
      return c.json(accepted, 202, { Location: `/admin/runs/${runId}` })
    },
  )

  mountRunRoutes(app, { db, runs, logger })

  app.get('/admin/status', async (c) => c.json(await status()))

  app.on(['GET', 'PUT', 'PATCH', 'DELETE'], '/admin/resync', (c) =>
    c.json({ error: 'method not allowed; POST a resync' }, 405, { Allow: 'POST' }),
  )

  return app
}
