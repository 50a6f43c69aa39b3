import type { Job } from 'pg-boss'

/**
 * The log context of a job that names a record (`{resource, id}`), read before its payload is
 * checked, so that even the line that drops an unreadable job says which record it was about.
 */
export function recordJobContext(job: Pick<Job<unknown>, 'id' | 'data'>) {
  const data = job.data as { resource?: unknown; id?: unknown } | null
  return {
    jobId: job.id,
    resource: typeof data?.resource === 'string' ? data.resource : undefined,
    recordId: typeof data?.id === 'number' ? data.id : undefined,
  }
}
