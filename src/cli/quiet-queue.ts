// The job queue as a command that works no jobs sees it (status, cancel): pg-boss without installing
// or migrating its schema, without its maintenance and schedules, and without registering an instance,
// so that it neither changes the schema nor passes for a running crm-sync (see local-sweep-worker.ts).
// `cancel` may have to send a sweep's job: it installs what start would only when that is missing.
import { PgBoss } from 'pg-boss'
import type { Logger } from '../log.ts'
import { accountQueue } from '../sync/account-queue.ts'
import { JOB_SCHEMA, type JobQueue, QUEUES, startJobQueue } from '../sync/job-queue.ts'

export type QuietQueue = { status: 'open'; boss: JobQueue } | { status: 'missing'; reason: string }

/**
 * The job queue as `account` sees it (null: the one account without ACCOUNTS_FILE), or why there is
 * none: pg-boss not installed yet, or at another schema version.
 */
export async function openQuietQueue(
  connectionString: string,
  logger: Logger,
  account: string | null = null,
): Promise<QuietQueue> {
  const boss = new PgBoss({
    connectionString,
    schema: JOB_SCHEMA,
    max: 2,
    application_name: 'crm-sync:cli',
    migrate: false,
    supervise: false,
    schedule: false,
    registerInstance: false,
  })
  boss.on('error', (error) => logger.warn({ err: error }, 'job queue error'))
  try {
    await boss.start()
    return { status: 'open', boss: accountQueue(boss, account) }
  } catch (error) {
    await boss.stop({ graceful: false }).catch(() => {})
    const message = error instanceof Error ? error.message : String(error)
    if (/not installed/i.test(message)) {
      return { status: 'missing', reason: 'the job queue is not installed yet (crm-sync start installs it)' }
    }
    if (/requires migrations/i.test(message)) {
      return {
        status: 'missing',
        reason:
          'the job queue schema is of another pg-boss version (crm-sync start of this version updates it)',
      }
    }
    throw error
  }
}

/** The job queue to send sweep jobs to: quiet when the sweep queue is there, else set up as start does. */
export async function openSendingQueue(
  connectionString: string,
  logger: Logger,
  account: string | null = null,
): Promise<JobQueue> {
  const queue = await openQuietQueue(connectionString, logger, account)
  if (queue.status === 'open') {
    // Every queue a command sends to: a database an older version set up lacks the newer ones.
    const sends = [QUEUES.sweep.name, QUEUES.runReport.name]
    const found = await Promise.all(sends.map((name) => queue.boss.getQueue(name)))
    if (found.every(Boolean)) return queue.boss
    await queue.boss.stop({ graceful: false })
  }
  return accountQueue(await startJobQueue(connectionString, logger, [account]), account)
}
