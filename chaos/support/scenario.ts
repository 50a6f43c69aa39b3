// What a scenario is to the runner: a name, a description for docs/chaos.md, and a run that returns
// its figures. Assertions are collected (a scenario goes on after one fails, so that its figures are
// still reported); the runner adds the two every scenario shares: no HTTP 500, no acknowledged
// delivery lost.
import type { DatabaseServer } from '../../bench/support/database.ts'
import type { Scope } from './cleanup.ts'
import type { Tally } from './tally.ts'

export interface ScenarioContext {
  server: DatabaseServer
  /** Shorter phases and smaller data: a smoke run, figures not comparable. */
  quick: boolean
  /** Undo steps for everything the scenario starts; closed by the runner, whatever happens. */
  scope: Scope
  log(message: string): void
  /** Records a failed assertion unless `condition` holds. */
  check(condition: boolean, failure: string): void
  /** A figure or remark for the report. */
  note(text: string): void
}

export interface Outcome {
  /** Every request the scenario sent to the engines and how they were answered. */
  tally: Tally
  /** Acknowledged (2xx) deliveries not in the inbox, or not applied in the end. */
  lost: number
  /** From the end of the fault to the engine working again (an acknowledged delivery, a sweep). */
  recoverSeconds?: number | null
  /** From the end of the fault or load to the mirror matching the simulator's truth. */
  convergeSeconds?: number | null
}

export interface Scenario {
  name: string
  title: string
  /** What it does and what it asserts (markdown, for docs/chaos.md). */
  description: string
  /** Longest the scenario may take, full and quick; the runner fails it after that. */
  limitSeconds: { full: number; quick: number }
  run(context: ScenarioContext): Promise<Outcome>
}

export interface ScenarioReport {
  scenario: Scenario
  outcome: Outcome | null
  notes: string[]
  failures: string[]
  seconds: number
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const secondsSince = (start: number) => Math.round((Date.now() - start) / 100) / 10
