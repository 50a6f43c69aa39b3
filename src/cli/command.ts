// What a command of `crm-sync` is: a name, its help text, its options, and what it does with the
// configuration. main.ts parses the options and the configuration once and hands them over.
import type { ParseArgsOptionsConfig } from 'node:util'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import type { LogOutput } from './terminal-log.ts'

/** Exit codes of every command. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const

export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>

export interface CommandContext {
  config: Config
  logger: Logger
  /** Where the logger writes: `resync --wait` diverts it above its progress bars while it draws them. */
  logs: LogOutput
  /** --verbose: every log line at LOG_LEVEL, those of look-ups and sweeps the command reports included. */
  verbose: boolean
  positionals: string[]
  values: OptionValues
  json: boolean
}

export interface Command {
  name: string
  /** One line for the list of commands. */
  summary: string
  /** The text of `crm-sync <name> --help`. */
  usage: string
  options: ParseArgsOptionsConfig
  /** Whether `--json` is offered. */
  json?: boolean
  /** `start` logs to stdout like the service it is; the other commands keep stdout for their output. */
  service?: boolean
  run(context: CommandContext): Promise<number>
}

/** A mistake in the command line: reported with the command's usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** The strings given for a `multiple` string option. */
export function stringList(value: OptionValues[string]): string[] {
  if (value === undefined) return []
  return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string')
}
