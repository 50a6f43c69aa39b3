// When runs start by themselves: an incremental run of every enabled resource once per
// INCREMENTAL_SYNC_INTERVAL (the first at start), and a full run on FULL_SYNC_CRON. Every replica
// ticks; pg-boss lets one tick through per interval (a singleton slot) and runs the cron schedule
// once for the whole cluster. The incremental run leaves out a resource that is still being swept
// (routine work is never doubled); the full run is never skipped: its sweep of a busy resource waits
// for the sweep holding it (and an incremental one makes way at its next page).
import type { Logger } from '../log.ts'
import { startWaitingSweeps } from '../store/runs.ts'
import type { RunMode } from '../store/schema.ts'
import { HEARTBEAT_REFRESH_SECONDS, type JobQueue, QUEUES } from './job-queue.ts'
import { mirroredResources, type RunDeps, type StartRunResult, startRun } from './runs.ts'

export interface ScheduleDeps {
  boss: JobQueue
  runs: RunDeps
  incrementalIntervalSeconds: number
  fullSyncCron: string
  logger: Logger
}

const polling = {
  pollingIntervalSeconds: 1,
  notifyPollingIntervalSeconds: 1,
  heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS,
}

const enabledNames = (runs: RunDeps) => mirroredResources(runs).map((r) => r.name)

/**
 * The run a schedule starts: an incremental one leaves out the resources that are being swept (or have
 * a sweep waiting); a full one waits for them, and leaves out only those a full sweep already covers.
 */
export function scheduledRun(runs: RunDeps, mode: RunMode): Promise<StartRunResult> {
  return startRun(runs, {
    mode,
    requestedBy: 'schedule',
    whenBusy: mode === 'incremental' ? 'skip' : 'queue',
  })
}

export async function startSchedules({
  boss,
  runs,
  incrementalIntervalSeconds,
  fullSyncCron,
  logger,
}: ScheduleDeps) {
  const startScheduledRun = (mode: RunMode) => async () => {
    const result = await scheduledRun(runs, mode)
    if (result.status === 'started') {
      const covered = result.covered.map((entry) => entry.resource)
      logger.info({ runId: result.runId, mode, covered, waiting: result.waiting }, 'run started')
    } else {
      logger.info(
        { mode, coveringRunId: result.runId },
        'every resource is being swept already; no run started',
      )
    }
    if (mode === 'incremental') {
      // The hand-over of a waiting sweep happens when the sweep before it ends; should that process have
      // died in between, the next tick starts it.
      const started = await startWaitingSweeps(runs.db, enabledNames(runs), runs.enqueue)
      if (started.length) logger.warn({ started }, 'started sweeps whose hand-over was missed')
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
