// The end of a run: the sweep whose end finished it logs one "run finished" line with what the run
// did and cost; the other sweeps of the run log none.
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createLogger } from '../../src/log.ts'
import type { SweepJob } from '../../src/store/runs.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { useTestDatabase } from '../support/database.ts'
import { sandboxConfig, startTestRun, sweepDeps } from './support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 30, behaviour: { crmRateLimit: null } })
})
afterAll(async () => {
  await sandbox?.stop()
})

describe('a finished run', () => {
  it('is logged once, by the sweep that finished it, with its records, requests and duration', async () => {
    const lines: Record<string, unknown>[] = []
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
        done()
      },
    })
    const logger = createLogger({ level: 'info', destination })
    const jobs: SweepJob[] = []
    const { result } = await startTestRun(
      database.db,
      { mode: 'full', resources: ['crm.people', 'crm.deals'] },
      jobs,
    )
    const runId = result.status === 'started' ? result.runId : 0
    const handler = createSweepHandler({ ...sweepDeps(database.db, sandboxConfig(sandbox)), logger })
    const signal = new AbortController().signal
    for (const job of jobs) await handler([{ id: `job-${job.resource}`, data: job, signal }])

    const finished = lines.filter((line) => line.msg === 'run finished')
    expect(finished).toHaveLength(1)
    expect(finished[0]).toMatchObject({
      runId,
      mode: 'full',
      status: 'succeeded',
      resources: 2,
      tombstoned: 0,
    })
    expect(finished[0]?.records).toBe(60) // 30 people and 30 deals
    expect(finished[0]?.requests).toBeGreaterThanOrEqual(2)
    expect(finished[0]?.seconds).toBeGreaterThanOrEqual(0)
  })
})
