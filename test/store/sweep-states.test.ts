// A sweep's state, named (src/store/runs/states.ts), through the transitions that move it; and which
// takes precedence, decided where a full run is created: the incremental sweep holding the resource is
// marked to make way, and goes on when the full run is cancelled before it made way.
import { describe, expect, it } from 'vitest'
import {
  cancelRun,
  claimSweep,
  createRun,
  finishSweep,
  handBackSweep,
  readRun,
  type SweepJob,
  saveSweepProgress,
  yieldSweep,
} from '../../src/store/runs.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()
const jobs: SweepJob[] = []
const enqueue = async (_trx: unknown, job: SweepJob) => void jobs.push(job)

async function run(mode: 'incremental' | 'full', resource: string) {
  const result = await createRun(database.db, { mode, resources: [resource], requestedBy: 'test' }, enqueue)
  if (result.status !== 'created') throw new Error(`run refused: ${JSON.stringify(result)}`)
  return result.runId
}

const stateOf = async (runId: number) => (await readRun(database.db, runId))?.resources[0]?.state

describe('a sweep state', () => {
  it('is named at every step: sent, running, handed back, running again, succeeded', async () => {
    const runId = await run('full', 'crm.deals')
    expect(await stateOf(runId)).toBe('sent')
    const key = { runId, resource: 'crm.deals', lease: 'first' }
    await claimSweep(database.db, key)
    expect(await stateOf(runId)).toBe('running')
    await handBackSweep(database.db, key)
    expect(await stateOf(runId)).toBe('handed_back')
    const second = { ...key, lease: 'second' }
    expect(await claimSweep(database.db, second)).not.toBeNull()
    expect(await stateOf(runId)).toBe('running')
    await finishSweep(database.db, enqueue, second, { status: 'succeeded' })
    expect(await stateOf(runId)).toBe('succeeded')
  })

  it('marks the incremental sweep holding a resource to make way for a full run created meanwhile', async () => {
    const incremental = await run('incremental', 'crm.people')
    const key = { runId: incremental, resource: 'crm.people', lease: 'routine' }
    await claimSweep(database.db, key)
    expect(await saveSweepProgress(database.db, key, { pages: 1 })).toEqual({ makeWay: false })

    const full = await run('full', 'crm.people')
    expect(await stateOf(full)).toBe('waiting')
    expect(await saveSweepProgress(database.db, key, { pages: 1 })).toEqual({ makeWay: true })
    await yieldSweep(database.db, enqueue, key)
    expect(await stateOf(incremental)).toBe('waiting')
    expect(await stateOf(full)).toBe('sent')
    await cancelRun(database.db, enqueue, full, 'test')
  })

  it('lets the incremental sweep go on when the full run it was to make way for is cancelled first', async () => {
    const incremental = await run('incremental', 'crm.companies')
    const key = { runId: incremental, resource: 'crm.companies', lease: 'routine' }
    await claimSweep(database.db, key)
    const full = await run('full', 'crm.companies')
    await cancelRun(database.db, enqueue, full, 'test')
    expect(await saveSweepProgress(database.db, key, { pages: 1 })).toEqual({ makeWay: false })
    expect(await stateOf(incremental)).toBe('running')
  })
})
