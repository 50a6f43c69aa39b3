// A job of QUEUES.sweep: one resource of one run. Failures of the sweep are recorded in the run and the
// job completes; only an interrupted sweep or a database that went away fails the job, so that its
// retry resumes from the checkpoint.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import { withLogContext } from '../../log.ts'
import { findResource } from '../../resources/index.ts'
import { abandonSweep } from '../../store/runs.ts'
import type { SweepDeps } from './deps.ts'
import { reportRunEnd } from './run-end.ts'
import { sweepResource } from './sweep-resource.ts'

// Old jobs outlive code: the payload is checked on entry, the resource against today's table.
const sweepJob = z.object({ runId: z.number().int().positive(), resource: z.string().min(1) })

type SweepJobInput = Pick<Job<unknown>, 'id' | 'data' | 'signal'>

export function createSweepHandler(deps: SweepDeps) {
  return async (jobs: SweepJobInput[]): Promise<void> => {
    for (const job of jobs) await withLogContext({ jobId: job.id }, () => handleSweep(deps, job))
  }
}

async function handleSweep(deps: SweepDeps, job: SweepJobInput): Promise<void> {
  const parsed = sweepJob.safeParse(job.data)
  if (!parsed.success) {
    deps.logger.error({ issues: parsed.error.issues }, 'sweep job with an unreadable payload; dropped')
    return
  }
  const { runId, resource: name } = parsed.data
  await withLogContext({ resource: name, runId }, async () => {
    const resource = findResource(name)
    if (!resource) {
      const ended = await abandonSweep(deps.db, deps.enqueue, runId, name, `unknown resource ${name}`)
      if (ended?.runEnded) await reportRunEnd(deps, runId)
      return
    }
    const result = await sweepResource(deps, { runId, resource, signal: job.signal })
    deps.logger.debug({ ...result }, 'sweep job done')
    if ('runEnded' in result && result.runEnded) await reportRunEnd(deps, runId)
  })
}
