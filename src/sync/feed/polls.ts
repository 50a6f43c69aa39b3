// The freshness polls of one process: the CRM's activity log every ACTIVITY_POLL_SECONDS (tasks and notes
// have no webhooks, and a webhook may be lost) and the newest page of reservation contacts and bookings
// every RESERVATION_POLL_SECONDS (the service has no webhooks). Each runs on one replica at a time and
// waits a period while what it covers is in its first sync or its service's budget is needed by other
// work (plan/polls.ts). A gap (more changes than a poll reads) starts an incremental run of what
// it covers.
import type { UpstreamClients } from '../../api-client/index.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import { activities, bookings, contacts } from '../../resources/index.ts'
import type { Db } from '../../store/database.ts'
import { enqueueRefresh, type JobQueue } from '../job-queue.ts'
import { pollWaits, readPollFacts } from '../plan/polls.ts'
import { runDeps, startRun, sweepEnqueuer } from '../runs.ts'
import { createActivityFeed, FEED_COVERS } from './activity-feed.ts'
import { createNewestPagePoll } from './newest-page.ts'
import { startPolling } from './poll-loop.ts'

export interface FreshnessPollDeps {
  db: Db
  boss: JobQueue
  clients: UpstreamClients
  config: Config
  logger: Logger
  onApplied?(resource: string, records: number): void
}

export function startFreshnessPolls(deps: FreshnessPollDeps): { stop(): Promise<void> } {
  const { db, boss, clients, config, logger } = deps
  const enqueue = sweepEnqueuer(boss)
  const runs = runDeps(config, db, enqueue)
  // A gap in what a poll read: incremental sweeps of what it covers find the changes now.
  const onGap = (requestedBy: string) => async (resources: readonly string[]) => {
    const result = await startRun(runs, { mode: 'incremental', resources, requestedBy, whenBusy: 'skip' })
    if (result.status === 'started')
      logger.info({ runId: result.runId, resources }, 'run started after a poll gap')
  }
  const yields = (service: string, covers: readonly string[]) => async () =>
    pollWaits(await readPollFacts(db, service, covers)) !== null
  const loops: { stop(): Promise<void> }[] = []
  const mirrored = new Set<string>(config.resources)
  const covered = [...FEED_COVERS].filter((name) => mirrored.has(name))
  // The feed is worth its requests while it refreshes a resource mirrored, or writes the log itself.
  if (config.activityPollSeconds > 0 && (covered.length > 0 || mirrored.has(activities.name))) {
    const feedLogger = logger.child({ task: 'activity-feed' })
    const feed = createActivityFeed({
      db,
      reader: clients.crm,
      logger: feedLogger,
      queueRefresh: (trx, job) => enqueueRefresh(boss, trx, job, config.refreshCoalesceSeconds),
      onApplied: deps.onApplied,
      onGap: onGap('activity-feed'),
      mirrored,
    })
    loops.push(
      startPolling(feed, {
        name: 'activity feed',
        pollSeconds: config.activityPollSeconds,
        logger: feedLogger,
        yields: yields('crm', covered),
      }),
    )
  }
  const reservation = clients.reservation
  if (reservation && config.reservationPollSeconds > 0) {
    for (const resource of [contacts, bookings].filter((polled) => mirrored.has(polled.name))) {
      const pollLogger = logger.child({ task: 'newest-page', resource: resource.name })
      const poll = createNewestPagePoll({
        db,
        reader: reservation,
        resource,
        logger: pollLogger,
        onApplied: deps.onApplied,
        onGap: onGap('newest-page-poll'),
      })
      loops.push(
        startPolling(poll, {
          name: `${resource.name} newest page`,
          pollSeconds: config.reservationPollSeconds,
          logger: pollLogger,
          yields: yields('reservation', [resource.name]),
        }),
      )
    }
  }
  return {
    async stop() {
      await Promise.all(loops.map((loop) => loop.stop()))
    },
  }
}
