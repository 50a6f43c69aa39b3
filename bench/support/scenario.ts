// What a scenario is and what it reports: figures, each beside the reference it is judged against
// (measured in the same run) and its target, with what bounds it when the target is missed.
import type { DatabaseServer } from './database.ts'

export interface Context {
  server: DatabaseServer
  /** Small sizes and short phases, for trying the benchmarks out. */
  quick: boolean
  /** Flags for the Node of every engine process a scenario starts (`--profile` adds `--cpu-prof`). */
  nodeOptions: string[]
  /** This scenario's options, given as `--option <scenario>.<name>=<value>` (names as it declares them). */
  options: Readonly<Record<string, string>>
  log(message: string): void
}

export interface Target {
  /** As the issue states it, e.g. "≥ 40% of reference". */
  text: string
  pass: boolean
  /** How far from the target, e.g. "-12% below"; set for misses. */
  by?: string
}

export interface Figure {
  measure: string
  value: number
  unit: string
  /** Digits shown. */
  digits?: number
  reference?: { value: number; unit: string; label: string; digits?: number }
  target?: Target
  /** What bounds the figure (said for every miss, and wherever it helps to read it). */
  bound?: string
}

export interface ScenarioReport {
  /** What was set up: sizes, budgets, settings. */
  settings: Record<string, unknown>
  figures: Figure[]
  /** Further measurements, kept in the JSON. */
  details?: Record<string, unknown>
}

export interface Scenario {
  name: string
  title: string
  /** Runs only when named with `--only` (too long for every run). */
  optIn?: boolean
  /** The options it takes: name → what it means (shown by `--help`, checked by run.ts). */
  options?: Record<string, string>
  run(ctx: Context): Promise<ScenarioReport>
}

export interface ScenarioResult extends ScenarioReport {
  name: string
  title: string
  seconds: number
  error?: string
}

const percent = (fraction: number) => `${Math.round(fraction * 100)}%`

/** value ≥ goal. */
export function atLeast(value: number, goal: number, text: string): Target {
  const pass = value >= goal
  return pass ? { text, pass } : { text, pass, by: `${percent(1 - value / goal)} short` }
}

/** value ≤ goal (for latencies, sizes, requests). */
export function atMost(value: number, goal: number, text: string): Target {
  const pass = value <= goal
  return pass ? { text, pass } : { text, pass, by: `${percent(value / goal - 1)} over` }
}
