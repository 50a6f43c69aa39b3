// When runs start by themselves: an incremental run of every enabled resource once per
// INCREMENTAL_SYNC_INTERVAL (the first at start), and a full run on FULL_SYNC_CRON. Every replica
// ticks; pg-boss lets one tick through per interval (a singleton slot) and runs the cron schedule
// once for the whole cluster, and a resource that is still being swept is skipped, not doubled.
import type { Logger } from '../log.ts'
import { type JobQueue, QUEUES } from './job-queue.ts'
import { type RunDeps, startRun } from './runs.ts'

export interface ScheduleDeps {
  boss: JobQueue
  runs: RunDeps
  incrementalIntervalSeconds: number
  fullSyncCron: string
  logger: Logger
}

const polling = { pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 }

export async function startSchedules({
  boss,
  runs,
  incrementalIntervalSeconds,
  fullSyncCron,
  logger,
}: ScheduleDeps) {
  const startScheduledRun = (mode: 'incremental' | 'full') => async () => {
    const result = await startRun(runs, { mode, requestedBy: 'schedule', whenBusy: 'skip' })
    if (result.status === 'started') {
      logger.info(
        { runId: result.runId, mode, skipped: result.busy.map((busy) => busy.resource) },
        'run started',
      )
    } else {
      logger.info({ mode, runningRunId: result.runId }, 'every resource is still being swept; run skipped')
    }
  }
  await boss.work(QUEUES.incrementalTick.name, polling, startScheduledRun('incremental'))
  await boss.work(QUEUES.fullTick.name, polling, startScheduledRun('full'))
  await boss.schedule(QUEUES.fullTick.name, fullSyncCron, null, { tz: 'UTC' })

  const tick = async () => {
    try {
      await boss.send(QUEUES.incrementalTick.name, null, {
        singletonKey: 'incremental',
        singletonSeconds: incrementalIntervalSeconds,
      })
    } catch (error) {
      logger.warn({ err: error }, 'could not queue the incremental tick')
    }
  }
  await tick()
  // Tick often enough to catch each slot early; a tick in a slot already taken is a no-op.
  const timer = setInterval(() => void tick(), Math.min(incrementalIntervalSeconds, 30) * 250).unref()
  return {
    stop() {
      clearInterval(timer)
    },
  }
}
