// 6. Memory: the peak resident set size of an engine process (VmHWM, its own: the sandbox runs in this
// process) during a full sweep of 20,000 and of 200,000 people from an unthrottled sandbox. The engine is
// started as `npm start` composes it, with the V8 flags `crm-sync start` runs with (bin/node-flags.js),
// on an empty database; its first run sweeps every resource from empty. For reference, the larger sweep
// again on Node's defaults (without those flags).
import { NODE_FLAGS } from '../bin/node-flags.js'
import { startSandbox } from '../src/sandbox/index.ts'
import { readRuns } from '../src/store/runs.ts'
import { createBenchDatabase } from './support/database.ts'
import { spawnEngine } from './support/engines.ts'
import { runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Figure, type Scenario } from './support/scenario.ts'
import { round, waitFor } from './support/stats.ts'

const LIMIT_MB = 300
// "Not growing with the record count": ten times the records may cost at most this much more.
const GROWTH = 0.15

/** `startFlags`: false runs the engine on Node's defaults instead of the flags of `crm-sync start`. */
async function sweepPeak(ctx: Context, people: number, startFlags = true) {
  const sandbox = await startSandbox({
    seedSize: { people },
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
  const database = await createBenchDatabase(ctx.server, `memory_${people}`)
  try {
    const flags = startFlags ? NODE_FLAGS.join(' ') : "Node's defaults"
    ctx.log(`first sync of ${people} people in an engine process (${flags})`)
    const started = performance.now()
    const engine = await spawnEngine(sandbox, {
      databaseUrl: database.url,
      env: { CRM_RATE_LIMIT: '10000', RESERVATION_RATE_LIMIT: '10000', INCREMENTAL_SYNC_INTERVAL: '86400' },
      nodeOptions: ctx.nodeOptions,
      startFlags,
    })
    const startRss = engine.peakRss()
    try {
      await waitFor(
        async () => ((await runsSettled(database.db)) ? true : undefined),
        'the first sync',
        600_000,
        200,
      )
      const seconds = (performance.now() - started) / 1000
      const [run] = await readRuns(database.db, { limit: 1 })
      const swept = run?.resources.find((sweep) => sweep.resource === 'crm.people')
      if (run?.status !== 'succeeded') throw new Error(`the first sync ended ${run?.status}: ${run?.error}`)
      return {
        people,
        records: swept?.records ?? 0,
        seconds: round(seconds, 1),
        peakRssMb: engine.peakRss() / 2 ** 20,
        rssAfterStartMb: round(startRss / 2 ** 20),
        cpuSeconds: round(engine.cpuSeconds(), 1),
      }
    } finally {
      await engine.stop()
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

async function run(ctx: Context) {
  const sizes = ctx.quick ? [5_000, 50_000] : [20_000, 200_000]
  const results = []
  for (const size of sizes) results.push(await sweepPeak(ctx, size))
  const [small, large] = results as [(typeof results)[number], (typeof results)[number]]
  const defaults = await sweepPeak(ctx, large.people, false)
  const growth = large.peakRssMb / small.peakRssMb - 1
  const figures: Figure[] = results.map((result) => ({
    measure: `peak RSS of the engine, full sweep of ${result.people.toLocaleString('en-US')} people`,
    value: result.peakRssMb,
    unit: 'MB',
    reference: {
      value: result.rssAfterStartMb,
      unit: 'MB',
      label: 'the same process, peak by the end of its start',
    },
    target: atMost(result.peakRssMb, LIMIT_MB, `< ${LIMIT_MB} MB`),
    bound:
      `${result.records} records in ${result.seconds} s (${result.cpuSeconds} s of the engine's CPU); ` +
      `${result.rssAfterStartMb} MB are the process once started (Node, its TypeScript stripping, pg-boss, pino, zod, hono, prom-client), ` +
      `the rest is garbage of the pages V8 has not collected yet, within the bounds of ${NODE_FLAGS.join(' ')} (see the growth)`,
  }))
  figures.push({
    measure: `growth of the peak from ${small.people.toLocaleString('en-US')} to ${large.people.toLocaleString('en-US')} people`,
    value: growth * 100,
    unit: '%',
    digits: 1,
    target: atMost(growth, GROWTH, `not growing (≤ ${GROWTH * 100}%)`),
    bound:
      'not data kept: after every full collection (--trace-gc) the heap is back to about 30 MB, at 5,000 ' +
      'people as at 200,000. Each page (about 5 MB allocated: the answer, 500 records parsed and checked, ' +
      'rows and the JSON parameters) dies with the page but outlives young-generation collections while its ' +
      'statement runs; the peak is how much of that garbage V8 lets pile up: a young generation of at most ' +
      '2 x 16 MB and an old generation collected at about 1.8x its live size (--max-old-space-size=1536) ' +
      "instead of 2 x 64 MB and 4x on Node's defaults",
  })
  figures.push({
    measure: `peak RSS, full sweep of ${large.people.toLocaleString('en-US')} people, engine on Node's defaults (without ${NODE_FLAGS.join(' ')})`,
    value: defaults.peakRssMb,
    unit: 'MB',
    reference: { value: large.peakRssMb, unit: 'MB', label: 'with them, as `crm-sync start` runs' },
    bound:
      `${defaults.records} records in ${defaults.seconds} s (with the flags: ${large.seconds} s); the flags cost CPU: ` +
      `${large.cpuSeconds} s of the engine's CPU against ${defaults.cpuSeconds} s, V8 collecting more often`,
  })
  return {
    settings: {
      sizes,
      engine: `its own process (start(), workers and HTTP) with ${NODE_FLAGS.join(' ')} as \`crm-sync start\` runs it, first sync of every resource from empty`,
      budget: 'lifted (unthrottled sandbox)',
      peak: 'VmHWM from /proc',
    },
    figures,
    details: { results, defaults },
  }
}

export const memory: Scenario = { name: 'memory', title: 'Memory', run }
