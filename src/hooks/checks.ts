// Periodic checks of the hooks, one per HOOKS_CHECK_INTERVAL across all replicas. As with the
// incremental tick (src/sync/schedules.ts), every replica offers a job to pg-boss under one singleton
// key per slot of the interval: pg-boss keeps the first offer of a slot and refuses the rest, and
// whichever replica's worker takes the job runs the check. Replicas never check side by side, so the
// CRM sees one hooks index request per interval however many replicas run.
import type { Logger } from '../log.ts'
import { HEARTBEAT_REFRESH_SECONDS, type JobQueue, QUEUES } from '../sync/job-queue.ts'

const QUEUE = QUEUES.hooksCheck.name
// A check may start a second or two after its slot opens: nothing waits for it.
const POLLING = { pollingIntervalSeconds: 2, heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS }

export interface HookCheckSchedule {
  stop(): Promise<void>
}

/** Runs `check` once per slot of `intervalSeconds`, on one replica, from one interval after now. */
export async function scheduleHookChecks(
  boss: JobQueue,
  intervalSeconds: number,
  check: () => Promise<void>,
  logger: Logger,
): Promise<HookCheckSchedule> {
  const workerId = await boss.work(QUEUE, POLLING, async () => {
    await check()
  })
  const offer = async () => {
    try {
      await boss.send(QUEUE, null, { singletonKey: QUEUE, singletonSeconds: intervalSeconds })
    } catch (error) {
      logger.warn({ err: error }, 'could not queue the hook check')
    }
  }
  // The registration at start has just looked at the hooks, so the first offer comes one interval
  // later; then offers come often enough to catch each slot early (one in a taken slot is a no-op).
  let ticker: NodeJS.Timeout | undefined
  const first = setTimeout(() => {
    void offer()
    ticker = setInterval(() => void offer(), Math.min(intervalSeconds, 30) * 250).unref()
  }, intervalSeconds * 1000).unref()
  return {
    async stop() {
      clearTimeout(first)
      clearInterval(ticker)
      await boss.offWork(QUEUE, { id: workerId }).catch(() => {})
    },
  }
}
