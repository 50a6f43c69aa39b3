// A sweep handed back by a process that stops (Ctrl-C on `resync --wait`) shows as waiting for a
// worker at once: `queued` with its job still sent, its run queued, its checkpoint and counts kept for
// the worker that resumes it. The attempt handed back can write no more; a worker that took the retry
// first keeps it; and a sweep handed back does not pass for one that has not started.
import { describe, expect, it } from 'vitest'
import {
  claimSweep,
  createRun,
  handBackSweep,
  readRun,
  readSweepLeases,
  type SweepJob,
  SweepLeaseLost,
  saveSweepProgress,
} from '../../src/store/runs.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

async function runningSweep(resource: string, mode: 'incremental' | 'full' = 'full') {
  const jobs: SweepJob[] = []
  const result = await createRun(
    database.db,
    { mode, resources: [resource], requestedBy: 'test' },
    async (_trx, job) => void jobs.push(job),
  )
  if (result.status !== 'created') throw new Error(`run refused: ${JSON.stringify(result)}`)
  const key = { runId: result.runId, resource, lease: 'first attempt' }
  expect(await claimSweep(database.db, key)).not.toBeNull()
  await saveSweepProgress(database.db, key, { records: 10, pages: 2, checkpoint: { nextPage: 3 } })
  return { key, jobs }
}

const sweepOf = async (runId: number, resource: string) =>
  (await readRun(database.db, runId))?.resources.find((sweep) => sweep.resource === resource)

describe('a sweep handed back', () => {
  it('is queued at once, its job still sent, and resumed by the next worker where it stopped', async () => {
    const { key } = await runningSweep('crm.people')
    const before = await sweepOf(key.runId, 'crm.people')
    expect(await readSweepLeases(database.db, [key])).toEqual([key])

    expect(await handBackSweep(database.db, key)).toBe(true)
    const run = await readRun(database.db, key.runId)
    expect(run?.status).toBe('queued')
    expect(run?.started_at).not.toBeNull()
    const sweep = run?.resources[0]
    // Not waiting for another sweep of its resource: its job is sent, a worker is all it waits for.
    expect(sweep).toMatchObject({ status: 'queued', waiting: false, records: 10, pages: 2 })
    expect(sweep?.started_at).toEqual(before?.started_at)
    expect(await readSweepLeases(database.db, [key])).toEqual([])

    // The attempt handed back can write no more.
    await expect(saveSweepProgress(database.db, key, { records: 5 })).rejects.toThrow(SweepLeaseLost)

    const resumed = await claimSweep(database.db, { ...key, lease: 'retry' })
    expect(resumed).toMatchObject({ mode: 'full', checkpoint: { nextPage: 3 }, records: 10 })
    expect(resumed?.startedAt).toEqual(before?.started_at)
    expect(await readRun(database.db, key.runId)).toMatchObject({ status: 'running' })
  })

  it('stays running when a worker took the retry first', async () => {
    const { key } = await runningSweep('crm.deals')
    await claimSweep(database.db, { ...key, lease: 'retry' })
    expect(await handBackSweep(database.db, key)).toBe(false)
    expect(await sweepOf(key.runId, 'crm.deals')).toMatchObject({ status: 'running' })
    await saveSweepProgress(database.db, { ...key, lease: 'retry' }, { records: 1 })
  })

  it('does not cover an incremental request as a sweep that has not started would', async () => {
    const { key } = await runningSweep('crm.tasks', 'incremental')
    await handBackSweep(database.db, key)
    // It resumes from where it stopped: changes it walked past before the request are not read by it.
    const again = await createRun(
      database.db,
      { mode: 'incremental', resources: ['crm.tasks'], requestedBy: 'test' },
      async () => {},
    )
    expect(again).toMatchObject({ status: 'created', waiting: ['crm.tasks'] })
  })
})
