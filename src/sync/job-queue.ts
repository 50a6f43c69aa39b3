// pg-boss, the job queue on PostgreSQL: queues are created at start with explicit policies.
import { CompiledQuery, type Kysely } from 'kysely'
import { PgBoss, type Queue } from 'pg-boss'
import type { Logger } from '../log.ts'
import type { DeliveryJob } from '../receiver/app.ts'
import type { Database } from '../store/schema.ts'

export const JOB_SCHEMA = 'pgboss'

export const DEAD_LETTER_QUEUE = 'dead-letter'

/** One entry per job kind. Old jobs outlive code: handlers validate their payload on entry. */
export const QUEUES = {
  deadLetter: { name: DEAD_LETTER_QUEUE, retentionSeconds: 30 * 86_400, deleteAfterSeconds: 30 * 86_400 },
  // A webhook delivery that the receiver accepted: one job per inbox row.
  delivery: {
    name: 'webhook-delivery',
    policy: 'standard',
    retryLimit: 20,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 300,
    deadLetter: DEAD_LETTER_QUEUE,
  },
} as const satisfies Record<string, Queue>

export type JobQueue = PgBoss

export async function startJobQueue(connectionString: string, logger: Logger): Promise<JobQueue> {
  const boss = new PgBoss({ connectionString, schema: JOB_SCHEMA, max: 4, application_name: 'crm-sync:jobs' })
  boss.on('error', (error) => logger.error({ err: error }, 'job queue error'))
  await boss.start()
  for (const queue of Object.values(QUEUES)) {
    const { name, ...options } = queue
    if (!(await boss.getQueue(name))) await boss.createQueue(name, options)
  }
  return boss
}

/** Lets pg-boss write inside a Kysely transaction, so a job commits or rolls back with our rows. */
export function jobConnection(db: Kysely<unknown>) {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const result = await db.executeQuery(CompiledQuery.raw(text, values))
      return { rows: result.rows as Record<string, unknown>[] }
    },
  }
}

/** The receiver's way to add a delivery job in its own transaction. */
export function deliveryEnqueuer(boss: JobQueue) {
  return async (trx: Kysely<Database>, job: DeliveryJob, jobId: string): Promise<void> => {
    const id = await boss.send(QUEUES.delivery.name, job, {
      id: jobId,
      db: jobConnection(trx as Kysely<unknown>),
    })
    if (id === null) throw new Error(`the job queue refused delivery job ${jobId}`)
  }
}
