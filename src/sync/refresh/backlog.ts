// The refreshes of a resource that wait, for the catch-up walk (catch-up.ts): those queued in pg-boss,
// read through its public `findJobs` (oldest first, at most as many as one walk can answer), and those
// running in this process. What another replica runs is not counted: the figure only decides whether
// a page of the index is worth a request, and how far down a walk reads.
import type { JobQueue, RefreshJob } from '../job-queue.ts'
import { QUEUES } from '../job-queue.ts'

export interface RefreshBacklog {
  pending: number
  /** When the earliest delivery that one of them answers arrived; null when none says. */
  oldest: Date | null
}

/** The queued refreshes of a resource, up to `limit`: how many, and the earliest delivery they answer. */
export type QueuedRefreshes = (resource: string, limit: number) => Promise<RefreshBacklog>

/** Reads the refresh queue through pg-boss's public API. */
export function queuedRefreshes(boss: JobQueue): QueuedRefreshes {
  return async (resource, limit) => {
    const jobs = await boss.findJobs<RefreshJob>(QUEUES.refresh.name, {
      data: { resource },
      queued: true,
      limit,
    })
    return { pending: jobs.length, oldest: earliest(jobs.map((job) => job.data.receivedAt)) }
  }
}

export interface RunningRefreshes {
  /** Counts a refresh as running until the returned function is called. */
  start(resource: string, receivedAt: string | undefined): () => void
  of(resource: string): RefreshBacklog
}

/** The refreshes this process runs, by resource. */
export function runningRefreshes(): RunningRefreshes {
  const running = new Map<string, Set<{ receivedAt?: string }>>()
  return {
    start(resource, receivedAt) {
      const entry = { receivedAt }
      const set = running.get(resource) ?? new Set()
      running.set(resource, set.add(entry))
      return () => {
        set.delete(entry)
        if (set.size === 0) running.delete(resource)
      }
    },
    of(resource) {
      const entries = [...(running.get(resource) ?? [])]
      return { pending: entries.length, oldest: earliest(entries.map((entry) => entry.receivedAt)) }
    },
  }
}

/** Both counted together. */
export function addBacklogs(a: RefreshBacklog, b: RefreshBacklog): RefreshBacklog {
  const oldest = [a.oldest, b.oldest].filter((time): time is Date => time !== null)
  return {
    pending: a.pending + b.pending,
    oldest: oldest.length ? new Date(Math.min(...oldest.map((time) => time.getTime()))) : null,
  }
}

function earliest(times: readonly (string | undefined)[]): Date | null {
  let least: number | null = null
  for (const time of times) {
    const ms = time === undefined ? Number.NaN : Date.parse(time)
    if (!Number.isNaN(ms) && (least === null || ms < least)) least = ms
  }
  return least === null ? null : new Date(least)
}
