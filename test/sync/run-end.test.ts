// The end of a run: the sweep whose end finished it logs one "run finished" line with what the run
// did and cost; the other sweeps of the run log none. A run a command ended reaches the service's log.
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { createLogger } from '../../src/log.ts'
import { cancelRun } from '../../src/status/run-history.ts'
import type { SweepJob } from '../../src/store/runs.ts'
import { startJobQueue } from '../../src/sync/job-queue.ts'
import { relayRunEnd } from '../../src/sync/run-report.ts'
import { sweepEnqueuer } from '../../src/sync/runs.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'
import { createTestDatabase, useTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { sandboxConfig, startTestRun, sweepDeps } from './support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 30, behaviour: { crmRateLimit: null } })
})
afterAll(async () => {
  await sandbox?.stop()
})

/** A logger at info whose lines land in `lines`, parsed. */
function capturing() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  return { lines, logger: createLogger({ level: 'info', destination }) }
}

describe('a finished run', () => {
  it('is logged once, by the sweep that finished it, with its records, requests and duration', async () => {
    const { lines, logger } = capturing()
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

describe('a run that a command ended', () => {
  const rig = useEngineRig()

  it('is logged "run finished" by the running service as well', async () => {
    const { lines, logger } = capturing()
    const own = rig.database(await createTestDatabase())
    rig.engine(await startEngine(sandbox, own.url, { INCREMENTAL_SYNC_INTERVAL: '86400' }, logger))
    // A run whose sweep jobs nobody sends, cancelled the way `crm-sync cancel` does it.
    const { result } = await startTestRun(own.db, { mode: 'full', resources: ['crm.people'] })
    if (result.status !== 'started') throw new Error('not started')
    const boss = await startJobQueue(own.url, createLogger({ level: 'silent' }))
    try {
      const cancelled = await cancelRun(
        { db: own.db, enqueue: sweepEnqueuer(boss), relay: relayRunEnd(boss) },
        result.runId,
        'cli',
      )
      expect(cancelled.status).toBe('cancelled')
    } finally {
      await boss.stop({ graceful: false })
    }
    const line = await waitFor(
      async () => lines.find((entry) => entry.msg === 'run finished' && entry.runId === result.runId),
      30_000,
      "the service's line for the cancelled run",
    )
    expect(line).toMatchObject({
      status: 'failed',
      endedBy: 'a command',
      error: 'crm.people: cancelled by cli',
    })
  }, 60_000)
})
