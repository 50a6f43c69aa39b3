// A job of QUEUES.sweep: one resource of one run. Failures of the sweep are recorded in the run and the
// job completes; only an interrupted sweep or a database that went away fails the job, so that its
// retry resumes from the checkpoint.
import type { Job } from 'pg-boss'
import { z } from 'zod'
import { findResource } from '../../resources/index.ts'
import { abandonSweep } from '../../store/runs.ts'
import { sweepResource } from '../sweep.ts'
import type { SweepDeps } from '../sweep-context.ts'

// Old jobs outlive code: the payload is checked on entry, the resource against today's table.
const sweepJob = z.object({ runId: z.number().int().positive(), resource: z.string().min(1) })

export type SweepJobData = z.infer<typeof sweepJob>

export function createSweepHandler(deps: SweepDeps) {
  return async (jobs: Pick<Job<unknown>, 'id' | 'data' | 'signal'>[]): Promise<void> => {
    for (const job of jobs) {
      const parsed = sweepJob.safeParse(job.data)
      if (!parsed.success) {
        deps.logger.error(
          { jobId: job.id, issues: parsed.error.issues },
          'sweep job with an unreadable payload; dropped',
        )
        continue
      }
      const { runId, resource: name } = parsed.data
      const resource = findResource(name)
      if (!resource) {
        await abandonSweep(deps.db, runId, name, `unknown resource ${name}`)
        continue
      }
      const result = await sweepResource(deps, { runId, resource, signal: job.signal })
      deps.logger.debug({ jobId: job.id, runId, resource: name, ...result }, 'sweep job done')
    }
  }
}
