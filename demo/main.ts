// `npm run demo`: crm-sync against the sandbox on a machine with nothing configured. A seeded account
// is mirrored from empty; then a stream of changes runs under faults (deliveries dropped, duplicated
// and reordered, API calls failing and throttled) until the mirror matches the sandbox again; then a
// summary and three example queries. Exits 0 once converged, 1 when it fails (e.g. does not converge
// in time); with --follow it keeps changing and syncing until Ctrl-C. Stopped by SIGINT or SIGTERM
// before the summary, it exits 130 or 143. Whichever way it ends, its temporary folder is removed.
import { parseArgs } from 'node:util'
import { RENAMED_SEED } from '../sandbox/command.ts'
import { describeDifferences, NotConverged, watch } from './session.ts'
import { renderSummary } from './summary.ts'
import { createDemoView, type DemoView } from './view.ts'
import { type DemoWorld, startWorld } from './world.ts'

const USAGE = `Usage: npm run demo [-- options]

Runs the sandbox, an embedded PostgreSQL and crm-sync together in this process, nothing to configure.

Options:
  --records <n>    records of each resource in the sandbox (default 300)
  --changes <n>    changes made upstream while faults are on (default 150)
  --seconds <n>    how long the stream of changes lasts (default 30)
  --timeout <n>    seconds to wait for convergence after the last change before failing (default 300)
  --random-seed <n>  which data and changes: the same number replays the same demo (default 1)
  --follow         after the summary, keep changing and syncing (and the database up for psql) until Ctrl-C
  -h, --help       show this help`

const FAULTS = {
  deliveries: { dropRate: 0.1, duplicateRate: 0.05, delayRate: 0.2, delayMs: 3000 },
  crm: { errorRate: 0.02, throttleRate: 0.02 },
  reservation: { errorRate: 0.02 },
}
const FAULTS_TEXT = [
  '  deliveries: 10% dropped, 5% duplicated, 20% delayed up to 3 s (so they arrive out of order)',
  '  API calls: 2% answered 500, and 2% of the CRM calls 429 on top of its rate limit',
]

interface DemoOptions {
  seed: number
  changes: number
  seconds: number
  timeoutSeconds: number
  randomSeed: number
  follow: boolean
}

function parseOptions(argv: string[]): DemoOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      records: { type: 'string' },
      // The former name of --records, easily taken for --random-seed: still read, with a warning.
      seed: { type: 'string' },
      changes: { type: 'string' },
      seconds: { type: 'string' },
      timeout: { type: 'string' },
      'random-seed': { type: 'string' },
      follow: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return 'help'
  if (values.seed !== undefined) console.error(RENAMED_SEED)
  const number = (name: string, value: string | undefined, fallback: number, min: number) => {
    const parsed = value === undefined ? fallback : Number(value)
    if (!Number.isInteger(parsed) || parsed < min)
      throw new Error(`--${name} must be a whole number of at least ${min}`)
    return parsed
  }
  return {
    seed: number(values.records !== undefined ? 'records' : 'seed', values.records ?? values.seed, 300, 1),
    changes: number('changes', values.changes, 150, 0),
    seconds: number('seconds', values.seconds, 30, 1),
    timeoutSeconds: number('timeout', values.timeout, 300, 10),
    randomSeed: number('random-seed', values['random-seed'], 1, 0),
    follow: values.follow === true,
  }
}

const totalRequests = (world: DemoWorld) => {
  const counters = world.sandbox.control.counters()
  return counters.crm.requests + counters.reservation.requests
}

/** The first sync, then the changes under faults; the facts of the summary. */
async function converge(world: DemoWorld, view: DemoView, options: DemoOptions, signal: AbortSignal) {
  const session = watch(world, view, signal)
  const started = Date.now()
  view.phase('First sync: every table swept into the empty mirror')
  await session.waitForConvergence(options.timeoutSeconds)
  const initialSyncMs = Date.now() - started
  const initialRequests = totalRequests(world)
  view.phase(`  in sync after ${Math.round(initialSyncMs / 1000)} s`)

  world.sandbox.control.setFaults(FAULTS)
  view.phase(`${options.changes} changes in ${options.seconds} s, under faults:`)
  for (const line of FAULTS_TEXT) view.phase(line)
  const gapMs = (options.seconds * 1000) / Math.max(options.changes, 1)
  await session.stream(options.changes, gapMs, options.randomSeed)
  const lastChange = Date.now()
  view.phase('Changes stopped: webhooks, retries and the incremental sweep (every 10 s) catch up')
  await session.waitForConvergence(options.timeoutSeconds)
  const convergenceMs = Date.now() - lastChange
  view.phase(`  in sync again after ${Math.round(convergenceMs / 1000)} s`)
  return { initialSyncMs, initialRequests, changes: options.changes, convergenceMs }
}

/** --follow: where to look from another terminal, then changes every 2 s until Ctrl-C. */
async function follow(world: DemoWorld, options: DemoOptions, signal: AbortSignal) {
  const { sandbox, databaseUrl } = world
  const env = [
    `DATABASE_URL="${databaseUrl}"`,
    `CRM_BASE_URL=${sandbox.crmUrl} CRM_API_KEY=${sandbox.crmApiKey}`,
    `RESERVATION_BASE_URL=${sandbox.reservationUrl} RESERVATION_API_KEY=${sandbox.reservationApiKey}`,
  ]
  process.stdout.write(`\nFollowing: one change every 2 s, faults still on; Ctrl-C stops. From another terminal:
  psql "${databaseUrl}"
  curl -H "Authorization: Bearer ${world.config.adminToken}" http://127.0.0.1:${world.engine.port}/admin/status
  export ${env.join(' \\\n    ')}
  npm run cli -- status
  npm run cli -- resync --full --wait\n\n`)
  const view = createDemoView(process.stdout)
  try {
    await watch(world, view, signal).stream(null, 2000, options.randomSeed + 1)
  } finally {
    view.stop()
  }
}

/** The exit code of a demo stopped by a signal: 128 + its number, as a shell reports it. */
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 }

async function demo(options: DemoOptions, signal: AbortSignal): Promise<number> {
  const view = createDemoView(process.stdout)
  let world: DemoWorld | undefined
  let summarized = false
  let failed = false
  try {
    view.phase('crm-sync demo: starting')
    world = await startWorld({
      seedSize: options.seed,
      randomSeed: options.randomSeed,
      step: (text) => view.phase(`  ${text}`),
    })
    const facts = await converge(world, view, options, signal)
    view.stop()
    const summary = await renderSummary(world.db, {
      ...facts,
      counters: world.sandbox.control.counters(),
      databaseUrl: options.follow ? world.databaseUrl : null,
    })
    process.stdout.write(`\n${summary}\n`)
    summarized = true
    if (options.follow) await follow(world, options, signal)
    return 0
  } catch (error) {
    view.stop()
    if (signal.aborted) return summarized ? 0 : (SIGNAL_EXIT[String(signal.reason)] ?? 130)
    failed = true
    process.stderr.write(`\ncrm-sync demo: ${error instanceof Error ? error.message : String(error)}\n`)
    if (error instanceof NotConverged) process.stderr.write(`${describeDifferences(error.tables)}\n`)
    return 1
  } finally {
    // The temporary folder goes on every way out; after a failure, crm-sync's log is kept.
    const keptLog = await world?.stop({ keepLog: failed })
    if (keptLog) process.stderr.write(`crm-sync's log is kept in ${keptLog}\n`)
  }
}

export async function runDemo(argv: string[]): Promise<number> {
  let options: DemoOptions | 'help'
  try {
    options = parseOptions(argv)
  } catch (error) {
    console.error(`crm-sync demo: ${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  if (options === 'help') {
    console.log(USAGE)
    return 0
  }
  // The first SIGINT or SIGTERM stops the demo in order, removing its temporary folder; another
  // one exits at once, and the world's exit hooks remove the folder and stop PostgreSQL.
  const stop = new AbortController()
  const interrupt = (name: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      process.stdout.write('\nstopping (once more to stop at once)\n')
      return stop.abort(name)
    }
    process.stderr.write('\ncrm-sync demo: stopped at once\n')
    process.exit(SIGNAL_EXIT[name] ?? 130)
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)
  try {
    return await demo(options, stop.signal)
  } finally {
    process.off('SIGINT', interrupt)
    process.off('SIGTERM', interrupt)
  }
}

if (import.meta.main) {
  process.exitCode = await runDemo(process.argv.slice(2))
}
