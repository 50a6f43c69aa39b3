// `npm run chaos [-- --only <scenario>[,<scenario>]] [--quick] [--write]`: the fault suite. Runs the
// scenarios one after the other against the sandbox and a real PostgreSQL (scratch databases), prints
// a summary table, and writes docs/chaos.md after a full run (every scenario, not --quick) or with
// --write. Exit code 1 when any assertion failed. See docs/chaos.md.
import { writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { openServer } from '../bench/support/database.ts'
import { databaseOutage } from './scenarios/database-outage.ts'
import { hostileRequests } from './scenarios/hostile-requests.ts'
import { killNine } from './scenarios/kill-nine.ts'
import { twoReplicas } from './scenarios/two-replicas.ts'
import { upstreamOutage } from './scenarios/upstream-outage.ts'
import { createScope, installExitHandlers, isLeaving } from './support/cleanup.ts'
import { consoleTable, markdownReport } from './support/report.ts'
import type { Outcome, Scenario, ScenarioReport } from './support/scenario.ts'

const SCENARIOS: Scenario[] = [databaseOutage, killNine, twoReplicas, upstreamOutage, hostileRequests]
const REPORT = new URL('../docs/chaos.md', import.meta.url)

const { values } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    quick: { type: 'boolean', default: false },
    write: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  console.log(
    `usage: npm run chaos -- [--only ${SCENARIOS.map((s) => s.name).join(',')}] [--quick] [--write]\n` +
      '  --quick  shorter faults and smaller data (a smoke run; figures not comparable)\n' +
      '  --write  write docs/chaos.md even after --only or --quick (a full run writes it anyway)',
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
const chosen = only.length ? SCENARIOS.filter((scenario) => only.includes(scenario.name)) : SCENARIOS
const quick = values.quick
installExitHandlers()

async function runScenario(scenario: Scenario, server: Awaited<ReturnType<typeof openServer>>) {
  const scope = createScope()
  const report: ScenarioReport = { scenario, outcome: null, notes: [], failures: [], seconds: 0 }
  const started = Date.now()
  const log = (message: string) =>
    console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${scenario.name}: ${message}`)
  const limit = (quick ? scenario.limitSeconds.quick : scenario.limitSeconds.full) * 1000
  let timer: NodeJS.Timeout | undefined
  try {
    const overtime = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`took longer than its limit of ${limit / 1000} s`)), limit)
    })
    const running = scenario.run({
      server,
      quick,
      scope,
      log,
      check: (condition, failure) => {
        if (!condition) report.failures.push(failure)
      },
      note: (text) => report.notes.push(text),
    })
    // Past its limit the scenario is abandoned: its scope closes under it, and what it then throws is moot.
    running.catch(() => {})
    const outcome: Outcome = await Promise.race([running, overtime])
    report.outcome = outcome
    if (outcome.tally.http500 > 0) report.failures.push(`${outcome.tally.http500} answers were HTTP 500`)
    if (outcome.lost > 0)
      report.failures.push(`${outcome.lost} acknowledged deliveries lost or never applied`)
  } catch (error) {
    report.failures.push(error instanceof Error ? error.message : String(error))
  } finally {
    clearTimeout(timer)
    await scope.close()
  }
  report.seconds = (Date.now() - started) / 1000
  log(report.failures.length === 0 ? 'pass' : `FAIL\n  ${report.failures.join('\n  ')}`)
  for (const note of report.notes) console.log(`    ${note}`)
  return report
}

const startedAt = new Date()
const loadAverage = loadavg()[0] ?? 0
const suite = createScope()
const server = await openServer(process.env.CHAOS_DATABASE_URL)
suite.defer(() => server.stop())
const reports: ScenarioReport[] = []
try {
  console.log(
    `chaos: ${chosen.map((s) => s.name).join(', ')}${quick ? ' (quick)' : ''} on PostgreSQL ${server.version} (${server.kind})`,
  )
  for (const scenario of chosen) {
    if (isLeaving()) break
    reports.push(await runScenario(scenario, server))
  }
} finally {
  await suite.close()
}
// Interrupted: the exit handler is cleaning up and will end the process; report nothing partial.
if (isLeaving()) await new Promise(() => {})
const totalSeconds = (Date.now() - startedAt.getTime()) / 1000
console.log(`\n${consoleTable(reports)}\n\nthe suite took ${Math.round(totalSeconds)} s`)
if (values.write || (!quick && only.length === 0)) {
  const command = `npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
  await writeFile(
    REPORT,
    markdownReport(reports, { startedAt, totalSeconds, server, quick, command, loadAverage }),
  )
  console.log(`wrote ${REPORT.pathname}`)
}
process.exit(reports.every((report) => report.failures.length === 0) ? 0 : 1)
