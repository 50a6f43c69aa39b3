// `npm run bench [-- --only ingest,apply] [--quick]`: runs the scenarios one after the other against
// the sandbox and a real PostgreSQL, then writes bench/results/<date>.json and <date>.md (with
// --scratch: under bench/.scratch/, which git ignores, for runs not meant to be committed).
// Opt-in scenarios (convergence, freshness-kinds) run only when named with --only. A scenario's options are given as
// `--option <scenario>.<name>=<value>`, e.g. `--option convergence.hooks=lean`.
// The database: BENCH_DATABASE_URL or DATABASE_URL (a server URL; a database per scenario is created
// on it and dropped afterwards), else the machine's PostgreSQL on 127.0.0.1:5432, else an embedded one.
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { missingNodeFlags } from '../bin/node-flags.js'
import { accounts } from './accounts.ts'
import { apply } from './apply.ts'
import { backfill } from './backfill.ts'
import { convergence } from './convergence.ts'
import { details } from './details.ts'
import { freshness } from './freshness.ts'
import { freshnessKinds } from './freshness-kinds.ts'
import { ingest } from './ingest.ts'
import { memory } from './memory.ts'
import { requests } from './requests.ts'
import { scaleOut } from './scale-out.ts'
import { statusPage } from './status-page.ts'
import { openServer } from './support/database.ts'
import { describeMachine, markdownReport, type RunResult } from './support/report.ts'
import type { Scenario, ScenarioResult } from './support/scenario.ts'

// The sweeps of apply and backfill run in this process: on the V8 flags `crm-sync start` runs with
// (bin/node-flags.js), so that they measure what users run. Re-executed with them (same pid) where
// Node can; elsewhere the apply settings say the sweeps ran on Node's defaults.
const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS)
if (missing.length > 0 && process.platform !== 'win32') {
  process.execve?.(process.execPath, [
    process.execPath,
    ...process.execArgv,
    ...missing,
    ...process.argv.slice(1),
  ])
}

const SCENARIOS: Scenario[] = [
  ingest,
  apply,
  backfill,
  requests,
  freshness,
  memory,
  scaleOut,
  convergence,
  freshnessKinds,
  statusPage,
  details,
  accounts,
]

const { values } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    option: { type: 'string', multiple: true },
    scratch: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})

if (values.help) {
  const scenarioOptions = SCENARIOS.flatMap((scenario) =>
    Object.entries(scenario.options ?? {}).map(
      ([name, meaning]) => `    ${scenario.name}.${name}: ${meaning}`,
    ),
  )
  console.log(
    `usage: npm run bench -- [--only ${SCENARIOS.map((s) => s.name).join(',')}] [--quick] [--profile] [--option <scenario>.<name>=<value> ...] [--scratch]\n` +
      '  --quick    small sizes and short phases (figures not comparable)\n' +
      '  --profile  a CPU profile of every engine and receiver process, under the temporary folder\n' +
      '  --scratch  write the results under bench/.scratch/ (ignored by git) instead of bench/results/\n' +
      `  opt-in scenarios (run only when named with --only): ${SCENARIOS.filter((s) => s.optIn)
        .map((s) => s.name)
        .join(', ')}\n` +
      `  --option   a scenario's option; known:\n${scenarioOptions.join('\n')}`,
  )
  process.exit(0)
}

const only = (values.only ?? []).flatMap((names) => names.split(',')).filter(Boolean)
const unknown = only.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name))
if (unknown.length) {
  console.error(
    `unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`,
  )
  process.exit(2)
}
const chosen = only.length
  ? SCENARIOS.filter((scenario) => only.includes(scenario.name))
  : SCENARIOS.filter((scenario) => !scenario.optIn)
const quick = values.quick ?? false

// --option <scenario>.<name>=<value>: checked against what each scenario declares.
const scenarioOptions = new Map<string, Record<string, string>>()
const badOptions: string[] = []
for (const given of values.option ?? []) {
  const match = /^([\w-]+)\.([\w-]+)=(.*)$/s.exec(given)
  const scenario = match && SCENARIOS.find((s) => s.name === match[1])
  if (!match || !scenario || !Object.hasOwn(scenario.options ?? {}, match[2] as string)) {
    badOptions.push(given)
    continue
  }
  const options = scenarioOptions.get(scenario.name) ?? {}
  options[match[2] as string] = match[3] as string
  scenarioOptions.set(scenario.name, options)
}
if (badOptions.length) {
  console.error(
    `unknown option(s): ${badOptions.join(', ')}; known: ${
      SCENARIOS.flatMap((s) => Object.keys(s.options ?? {}).map((name) => `${s.name}.${name}`)).join(', ') ||
      'none'
    } (as --option <scenario>.<name>=<value>)`,
  )
  process.exit(2)
}

const startedAt = new Date()
const profileDir = join(tmpdir(), 'crm-sync-bench-profiles', startedAt.toISOString().replaceAll(':', '-'))
const nodeOptions = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`
const runStart = performance.now()
const log = (message: string) => console.log(`[${elapsed(runStart).padStart(7)}] ${message}`)

// Scenario code never reads the environment: the URL is decided here, once.
const server = await openServer(process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || undefined)
const machine = describeMachine(server)
log(`PostgreSQL ${server.version} (${server.kind}); ${machine.cores} cores; Node ${machine.node}`)

const results: ScenarioResult[] = []
try {
  for (const scenario of chosen) {
    log(`${scenario.name}: ${scenario.title}`)
    const started = performance.now()
    const ctx = {
      server,
      quick,
      nodeOptions,
      options: scenarioOptions.get(scenario.name) ?? {},
      log: (message: string) => log(`  ${scenario.name}: ${message}`),
    }
    try {
      const report = await scenario.run(ctx)
      results.push({
        name: scenario.name,
        title: scenario.title,
        seconds: (performance.now() - started) / 1000,
        ...report,
      })
    } catch (error) {
      console.error(error)
      results.push({
        name: scenario.name,
        title: scenario.title,
        seconds: (performance.now() - started) / 1000,
        settings: {},
        figures: [],
        error: error instanceof Error ? error.message : String(error),
      })
    }
    log(`${scenario.name}: done in ${elapsed(started)}`)
  }
} finally {
  await server.stop()
}

const run: RunResult = {
  startedAt: startedAt.toISOString(),
  quick,
  machine,
  seconds: (performance.now() - runStart) / 1000,
  scenarios: results,
}
const partial = quick || only.length > 0
const stem = `${startedAt.toISOString().slice(0, 10)}${partial ? `-${quick ? 'quick' : 'partial'}${only.length ? `-${only.join('-')}` : ''}` : ''}`
const place = values.scratch ? '.scratch' : 'results'
const folder = new URL(`./${place}/`, import.meta.url)
await mkdir(folder, { recursive: true })
const markdown = markdownReport(run)
await writeFile(new URL(`${stem}.json`, folder), `${JSON.stringify(run, null, 2)}\n`)
await writeFile(new URL(`${stem}.md`, folder), markdown)
console.log(`\n${markdown}`)
log(`written: bench/${place}/${stem}.json and .md`)
if (values.profile) log(`CPU profiles: ${profileDir} (open them in Chrome DevTools or speedscope)`)
process.exit(results.some((result) => result.error) ? 1 : 0)
