// The logger of a command. `start` logs to stdout like the service it is; one-shot commands keep stdout
// for their output and log to stderr, warnings and worse unless --verbose. A person at a terminal reads
// one line per entry (terminal-log.ts); a pipe, a file or the container image gets pino's JSON.
import pino from 'pino'
import type { Config } from '../config/index.ts'
import { configSecrets, createLogger, type Logger } from '../log.ts'
import type { Command } from './command.ts'
import { createLogOutput, type LogOutput } from './terminal-log.ts'

export interface TerminalStream {
  write(text: string): unknown
  isTTY?: boolean
}

/**
 * Whether this is a development install: pino-pretty is a devDependency, absent from the container
 * image, whose `docker run -it` has a terminal too and still logs JSON for the log collector.
 */
function developmentInstall(): boolean {
  try {
    import.meta.resolve('pino-pretty')
    return true
  } catch {
    return false
  }
}

const DEBUG_LEVELS = ['debug', 'trace']

export function commandLogger(
  command: Pick<Command, 'service'>,
  config: Config,
  verbose: boolean,
  streams: { stdout: TerminalStream; stderr: TerminalStream } = process,
): { logger: Logger; logs: LogOutput } {
  const secrets = configSecrets(config)
  const service = command.service === true
  const chatty = ['info', ...DEBUG_LEVELS].includes(config.logLevel)
  const level = service || !chatty || verbose ? config.logLevel : 'warn'
  const stream = service ? streams.stdout : streams.stderr
  const person = stream.isTTY === true && (!service || developmentInstall())
  const format = person ? { debug: DEBUG_LEVELS.includes(level), time: service } : null
  const logs = createLogOutput(stream, format)
  return { logger: createLogger({ level, destination: logs, secrets }), logs }
}

/**
 * The logger of work whose outcome the command shows itself (a look-up it reports, sweeps it draws):
 * only what is at least as bad as `floor`, unless --verbose asked for every line.
 */
export function quieter(logger: Logger, verbose: boolean, floor: 'error' | 'silent'): Logger {
  if (verbose) return logger
  const rank = (level: string) => pino.levels.values[level] ?? Number.POSITIVE_INFINITY // silent: above all
  return rank(logger.level) >= rank(floor) ? logger : logger.child({}, { level: floor })
}
