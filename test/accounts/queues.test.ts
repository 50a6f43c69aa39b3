// An account's queues in the one job queue (src/sync/account-queue.ts): every queue of an account is
// made at start with its policies and its dead letters going to the account's own dead-letter queue;
// what an account sends, works and schedules stays in its queues; an account no longer configured
// loses its schedules at the next start, and the others keep theirs.
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/log.ts'
import { accountQueue } from '../../src/sync/account-queue.ts'
import { type JobQueue, QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'

const logger = createLogger({ level: 'silent' })

describe('the queues of accounts', () => {
  const database = useTestDatabase()
  const started: JobQueue[] = []
  afterAll(async () => {
    for (const boss of started) await boss.stop({ graceful: false })
  })
  const start = async (accounts: (string | null)[], pruneSchedules = true) => {
    const boss = await startJobQueue(database.url, logger, accounts, { pruneSchedules })
    started.push(boss)
    return boss
  }

  it('are made per account, dead letters to the account’s own, and keep jobs to the account', async () => {
    const boss = await start(['north', 'south'])
    for (const account of ['north', 'south'])
      for (const queue of Object.values(QUEUES))
        expect(await boss.getQueue(`${account}/${queue.name}`), `${account}/${queue.name}`).toBeTruthy()
    expect((await boss.getQueue(`north/${QUEUES.sweep.name}`))?.deadLetter).toBe(
      `north/${QUEUES.deadLetter.name}`,
    )
    expect(await boss.getQueue(QUEUES.sweep.name)).toBeNull()

    const north = accountQueue(boss, 'north')
    const south = accountQueue(boss, 'south')
    const id = await north.send(QUEUES.runReport.name, { runId: 1 })
    expect(await south.fetch(QUEUES.runReport.name)).toEqual([])
    const [taken] = await north.fetch(QUEUES.runReport.name)
    expect(taken?.id).toBe(id)
    expect((await boss.getJobById(`north/${QUEUES.runReport.name}`, id as string))?.data).toEqual({
      runId: 1,
    })
  })

  it('end the schedules of an account no longer configured, and keep the others’', async () => {
    const both = await start(['north', 'south'])
    await accountQueue(both, 'north').schedule(QUEUES.fullTick.name, '0 3 * * *', null, { tz: 'UTC' })
    await accountQueue(both, 'south').schedule(QUEUES.fullTick.name, '0 3 * * *', null, { tz: 'UTC' })
    await both.stop({ graceful: false })
    // A command that works on one account (resync --account north) ends no other's schedule.
    const command = await start(['north'], false)
    expect((await command.getSchedules()).map((schedule) => schedule.name).sort()).toEqual([
      `north/${QUEUES.fullTick.name}`,
      `south/${QUEUES.fullTick.name}`,
    ])
    await command.stop({ graceful: false })
    const northOnly = await start(['north'])
    expect((await northOnly.getSchedules()).map((schedule) => schedule.name)).toEqual([
      `north/${QUEUES.fullTick.name}`,
    ])
  })
})
