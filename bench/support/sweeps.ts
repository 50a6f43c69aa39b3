// Runs swept in this process with the engine's own sweep handler (as a worker would run its jobs,
// without the queue), and runs read back from the database.
import { createUpstreamMetrics } from '../../src/api-client/index.ts'
import { total } from '../../src/api-client/metrics.ts'
import type { Config } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import type { Db } from '../../src/store/database.ts'
import { readRun, type SweepJob } from '../../src/store/runs.ts'
import { startRun } from '../../src/sync/runs.ts'
import { sweepDepsFrom } from '../../src/sync/sweep/deps.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'

export interface SweptRun {
  runId: number
  seconds: number
  /** Seconds the sweeps waited for the request budget (its window or a 429 pause). */
  throttledSeconds: number
  run: NonNullable<Awaited<ReturnType<typeof readRun>>>
}

/** Starts a run of `resources` and works its sweeps one after the other; throws unless it succeeded. */
export async function sweepHere(
  db: Db,
  config: Config,
  request: { mode: 'incremental' | 'full'; resources: string[] },
): Promise<SweptRun> {
  const logger = createLogger({ level: 'warn', pretty: false })
  const jobs: SweepJob[] = []
  const started = performance.now()
  const result = await startRun(
    {
      db,
      reservationEnabled: config.reservation !== null,
      enqueue: async (_trx, job) => void jobs.push(job),
    },
    { ...request, requestedBy: 'bench' },
  )
  if (result.status !== 'started') throw new Error(`run refused: ${JSON.stringify(result)}`)
  const metrics = createUpstreamMetrics()
  const handler = createSweepHandler(
    sweepDepsFrom(config, { db, logger, metrics, enqueue: async () => {}, queueChecks: async () => {} }),
  )
  const signal = new AbortController().signal
  await handler(jobs.map((job, i) => ({ id: `bench-${i}`, data: job, signal })))
  const seconds = (performance.now() - started) / 1000
  const run = await readRun(db, result.runId)
  if (run?.status !== 'succeeded') throw new Error(`run ${result.runId} ended ${run?.status}: ${run?.error}`)
  return { runId: result.runId, seconds, throttledSeconds: total(metrics.throttledSeconds), run }
}

/** Waits for run `runId` (started elsewhere) to finish; returns it. */
export async function finishedRun(db: Db, runId: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const run = await readRun(db, runId)
    if (run && (run.status === 'succeeded' || run.status === 'failed')) return run
    if (Date.now() > deadline) throw new Error(`run ${runId} did not finish within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
