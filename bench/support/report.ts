// The results of a run: the machine, then one table of every figure beside its reference and target.
import { cpus, loadavg, release, totalmem } from 'node:os'
import type { DatabaseServer } from './database.ts'
import type { Figure, ScenarioResult } from './scenario.ts'

export interface Machine {
  cores: number
  cpu: string
  memoryGb: number
  os: string
  node: string
  postgres: string
  /** Where the PostgreSQL came from: given by URL, the machine's own, or embedded. */
  postgresKind: DatabaseServer['kind']
  loadAverageAtStart: number[]
}

export function describeMachine(server: DatabaseServer): Machine {
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${process.platform} ${release()}`,
    node: process.version,
    postgres: server.version,
    postgresKind: server.kind,
    loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
  }
}

export interface RunResult {
  startedAt: string
  quick: boolean
  machine: Machine
  seconds: number
  scenarios: ScenarioResult[]
}

const formatNumber = (value: number, digits = 0) =>
  Number.isFinite(value)
    ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a'

const withUnit = (value: number, unit: string, digits?: number) => {
  const number = formatNumber(value, digits ?? (Math.abs(value) < 10 && value !== Math.round(value) ? 2 : 0))
  if (unit === '') return number
  return unit.startsWith('/') || unit === '%' ? `${number}${unit}` : `${number} ${unit}`
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

function verdict(figure: Figure): string {
  if (!figure.target) return '—'
  return figure.target.pass ? 'pass' : `**miss** (${figure.target.by ?? 'missed'})`
}

export function markdownTable(scenarios: ScenarioResult[]): string {
  const lines = [
    '| # | Scenario | Measure | Result | Reference (same run) | Target | Verdict |',
    '|---|---|---|---|---|---|---|',
  ]
  scenarios.forEach((scenario, index) => {
    if (scenario.error) {
      lines.push(`| ${index + 1} | ${scenario.title} | — | failed: ${cell(scenario.error)} | | | **error** |`)
      return
    }
    for (const figure of scenario.figures) {
      const reference = figure.reference
        ? `${withUnit(figure.reference.value, figure.reference.unit, figure.reference.digits)} (${figure.reference.label})`
        : ''
      lines.push(
        `| ${index + 1} | ${cell(scenario.title)} | ${cell(figure.measure)} | ${withUnit(figure.value, figure.unit, figure.digits)} | ${cell(reference)} | ${cell(figure.target?.text ?? '')} | ${verdict(figure)} |`,
      )
    }
  })
  return lines.join('\n')
}

export function markdownReport(run: RunResult): string {
  const { machine } = run
  const bounds = run.scenarios.flatMap((scenario) =>
    scenario.figures
      .filter((figure) => figure.bound)
      .map(
        (figure) =>
          `- **${scenario.title}, ${figure.measure}**${figure.target && !figure.target.pass ? ' (missed)' : ''}: ${figure.bound}`,
      ),
  )
  const settings = run.scenarios.map(
    (scenario) =>
      `- ${scenario.title} (${Math.round(scenario.seconds)} s): ${Object.entries(scenario.settings)
        .map(([key, value]) => `${key} ${typeof value === 'string' ? value : JSON.stringify(value)}`)
        .join(', ')}`,
  )
  return [
    `# crm-sync benchmarks, ${run.startedAt}${run.quick ? ' (quick: small sizes, not comparable)' : ''}`,
    '',
    `Machine: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGb} GB memory, ${machine.os}; ` +
      `Node ${machine.node}; PostgreSQL ${machine.postgres} (${machine.postgresKind}); ` +
      `load average at start ${machine.loadAverageAtStart.join(' ')}. Total ${Math.round(run.seconds)} s.`,
    '',
    markdownTable(run.scenarios),
    '',
    '## What bounds each figure',
    '',
    ...bounds,
    '',
    '## Settings',
    '',
    ...settings,
    '',
  ].join('\n')
}
