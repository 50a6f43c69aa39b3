// The job queue as a process that dies leaves it: a tick of a singleton queue that its process left
// active is failed by its missed heartbeats, so that the next tick is not held back until its expiry.
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'

const logger = createLogger({ level: 'silent' })

describe('job queue', () => {
  const database = useTestDatabase()
  let boss: JobQueue | undefined
  afterAll(async () => {
    await boss?.stop({ graceful: false })
  })

  it.each([QUEUES.incrementalTick.name, QUEUES.fullTick.name, QUEUES.hooksCheck.name])(
    'fails a %s job whose worker died, within seconds rather than at its expiry',
    async (queue) => {
      boss ??= await startJobQueue(database.url, logger)
      const id = await boss.send(queue, null)
      expect(id).toBeTruthy()
      // Taken by a worker that never beats: what a process killed mid-tick leaves behind.
      const [taken] = await boss.fetch(queue)
      expect(taken?.id).toBe(id)
      const job = await waitFor(
        async () => {
          const job = await boss?.getJobById(queue, id as string)
          return job?.state === 'failed' ? job : undefined
        },
        30_000,
        `the ${queue} job failed by its missed heartbeats`,
      )
      expect(job.output).toMatchObject({ value: { message: 'job heartbeat timeout' } })
      // the singleton queue takes the next tick
      expect(await boss.send(queue, null)).toBeTruthy()
    },
    40_000,
  )
})
