// The suite's summary: a table on the terminal and docs/chaos.md (the figures of the latest full run,
// with what each scenario does and how to run it).
import { cpus, release, totalmem } from 'node:os'
import type { DatabaseServer } from '../../bench/support/database.ts'
import type { ScenarioReport } from './scenario.ts'

const COLUMNS = [
  'scenario',
  'result',
  'sent',
  '2xx',
  'lost',
  '500',
  '503',
  '4xx',
  'no answer',
  'recover s',
  'converge s',
  'took s',
] as const

const seconds = (value: number | null | undefined) =>
  value === null || value === undefined ? '–' : value.toFixed(1)

function row(report: ScenarioReport): string[] {
  const { outcome } = report
  const tally = outcome?.tally
  const count = (value: number | undefined) => (value === undefined ? '–' : String(value))
  return [
    report.scenario.name,
    report.failures.length === 0 ? 'pass' : 'FAIL',
    count(tally?.sent),
    count(tally?.acknowledged),
    count(outcome?.lost),
    count(tally?.http500),
    count(tally?.http503),
    count(tally?.client4xx),
    count(tally === undefined ? undefined : tally.unreachable + tally.timeout),
    seconds(outcome?.recoverSeconds),
    seconds(outcome?.convergeSeconds),
    seconds(report.seconds),
  ]
}

export function consoleTable(reports: ScenarioReport[]): string {
  const rows = [[...COLUMNS], ...reports.map(row)]
  const widths = COLUMNS.map((_, column) => Math.max(...rows.map((cells) => (cells[column] ?? '').length)))
  return rows
    .map((cells) =>
      cells.map((cell, column) => (column < 2 ? cell.padEnd : cell.padStart).call(cell, widths[column] ?? 0)),
    )
    .map((cells) => cells.join('  '))
    .join('\n')
}

export interface RunInfo {
  startedAt: Date
  totalSeconds: number
  server: DatabaseServer
  quick: boolean
  command: string
  /** The machine's 1-minute load average when the suite started (other work competes for the cores). */
  loadAverage: number
}

export function describeMachine(): string {
  const cores = cpus()
  return `${cores.length} cores (${cores[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GB, Linux ${release()}`
}

/** A failure as a list item: its first line, and the rest (a stack, differences) as a code block. */
function failureItem(failure: string): string {
  const [first, ...rest] = failure.trim().split('\n')
  if (rest.length === 0) return `- ${first}`
  return `- ${first}\n\n  \`\`\`\n${rest.map((line) => `  ${line.trim()}`).join('\n')}\n  \`\`\``
}

export function markdownReport(reports: ScenarioReport[], info: RunInfo): string {
  const table = [
    `| ${COLUMNS.join(' | ')} |`,
    `|${COLUMNS.map((_, column) => (column < 2 ? '---' : '--:')).join('|')}|`,
    ...reports.map((report) => `| ${row(report).join(' | ')} |`),
  ]
  const sections = reports.map((report) => {
    const lines = [
      `### ${report.scenario.name}: ${report.scenario.title}`,
      '',
      report.scenario.description,
      '',
    ]
    if (report.notes.length) lines.push('Figures of this run:', '', ...report.notes.map((n) => `- ${n}`), '')
    if (report.failures.length) lines.push('Failed:', '', ...report.failures.map(failureItem), '')
    return lines.join('\n')
  })
  const passed = reports.every((report) => report.failures.length === 0)
  return `# Fault suite (\`npm run chaos\`)

A suite that breaks what crm-sync depends on while it works (CI runs it after the tests, and fails
when it fails: \`.ci/run\`), and checks the two promises of
DESIGN.md that matter most when things go wrong: **a delivery answered 2xx is never lost** (its row
is in \`sync.inbox\` and is applied), and **the receiver never answers 500** (a database that is down
or slow gets 503, so the CRM retries). After each fault the mirror must converge to the simulator's
truth (\`test/support/truth.ts\`: live ids, \`updated_at\`, fields, tags, tombstones, for the CRM and
the reservation service).

Everything runs on loopback: the project's sandbox (\`sandbox/\`) in the suite's process, the
engines as \`crm-sync start\` child processes, and TCP proxies (\`chaos/support/proxy.ts\`) that cut
or slow the engine's way to PostgreSQL or to the upstream. The machine's PostgreSQL itself is never
stopped nor slowed; each scenario works in a scratch database (\`crm_sync_chaos_*\`) dropped at its end.

## How to run

\`\`\`sh
npm run chaos                                 # every scenario (7 to 9 minutes on 2 cores); writes this file
npm run chaos -- --quick                      # shorter faults, smaller data: a smoke run (this file untouched)
npm run chaos -- --only kill-nine             # one scenario (or several: --only a,b); this file untouched
npm run chaos -- --only kill-nine --write     # ... and write this file anyway
\`\`\`

The database server: \`CHAOS_DATABASE_URL\` (a server URL; scratch databases are created on it), else
PostgreSQL on 127.0.0.1:5432, else an embedded one. \`CHAOS_ENGINE_NODE_OPTIONS\` adds Node options to
every engine (\`--import ./try-a-fix.mjs\`, \`--cpu-prof\`). Each scenario has a hard time limit. Exit code 0 when every assertion held, 1
otherwise (the failures are listed), 130 on Ctrl-C; every engine and proxy the suite started is
stopped and every scratch database dropped on every way out. This file is rewritten by a run of every
scenario without \`--quick\` (or with \`--write\`).

Columns: **sent** requests our senders (or the hostile client) sent; **2xx** acknowledged; **lost**
acknowledged but missing from \`sync.inbox\`, not applied, or (the sandbox's own deliveries, counted)
fewer rows than acknowledgements; **500** / **503** answers; **4xx**; **no answer** refused, reset
or timed out connections (an engine being killed or restarted); **recover** from the end of the fault
to the engine working again; **converge** to the mirror matching the truth; **took** the scenario's
wall time.

## Latest run

${info.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${describeMachine()}, Node ${process.version},
PostgreSQL ${info.server.version} (${info.server.kind}), load average ${info.loadAverage.toFixed(2)} at the start;
\`${info.command}\`; ${passed ? 'every assertion held' : '**some assertions failed**'}; the suite took ${Math.round(info.totalSeconds)} s.

${table.join('\n')}

## Scenarios

${sections.join('\n')}`
}
