// The `crm-sync` command line: finds the command, parses its options, then the configuration (once),
// and runs it. Exit codes: 0 done, 1 failed, 2 invalid configuration or usage, 130 interrupted.
import { parseArgs } from 'node:util'
import { selectAccount } from '../config/account-config.ts'
import { type Config, ConfigError, loadConfig, REMOVED_VARIABLES } from '../config/index.ts'
import { configSecrets, secretScrubber } from '../log.ts'
import { checkCommand } from './check.ts'
import { type Command, type CommandContext, EXIT, UsageError } from './command.ts'
import { commandLogger } from './command-logger.ts'
import { expectedFailure } from './failure.ts'
import { hooksCommand } from './hooks.ts'
import { migrateCommand } from './migrate.ts'
import { resyncCommand } from './resync.ts'
import { cancelCommand, runsCommand } from './runs.ts'
import { runSchema, schemaCommand } from './schema.ts'
import { startCommand } from './start.ts'
import { statusCommand } from './status-command.ts'
import { targetLines } from './targets.ts'

const commands: Command[] = [
  startCommand,
  migrateCommand,
  checkCommand,
  hooksCommand,
  resyncCommand,
  runsCommand,
  cancelCommand,
  statusCommand,
  schemaCommand,
]

const SANDBOX_SUMMARY = 'serve a simulated CRM and reservation service on loopback (from a clone)'

const USAGE = `Usage: crm-sync <command> [options]

Commands:
${[...commands.map((c) => [c.name, c.summary]), ['sandbox', SANDBOX_SUMMARY]]
  .map(([name, summary]) => `  ${name?.padEnd(9)}  ${summary}`)
  .join('\n')}

Every command takes --help. With several accounts (ACCOUNTS_FILE), --account <name> names the one a
command works on; start, and migrate and status without it, work on every account. status, resync, runs,
cancel and hooks take --json for scripts;
--verbose shows the logs of one-shot commands at LOG_LEVEL (otherwise only warnings and errors, on
stderr). Each command first says on stderr which database and upstream accounts it uses.

Configuration comes from the environment and a .env file in the working directory (see README.md).`

const COMMON_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  verbose: { type: 'boolean' },
  account: { type: 'string' },
} as const

function parseCommandLine(command: Command, args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        ...COMMON_OPTIONS,
        ...(command.json ? { json: { type: 'boolean' } } : {}),
        ...command.options,
      },
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

function usageFailure(message: string, usage: string): number {
  console.error(`crm-sync: ${message}\n\n${usage}`)
  return EXIT.usage
}

export async function run(argv: string[]): Promise<number> {
  const index = argv.findIndex((arg) => !arg.startsWith('-'))
  const name = index === -1 ? undefined : argv[index]
  // bin/crm-sync.js runs the sandbox (../../sandbox) in place of this CLI.
  if (name === 'sandbox') return usageFailure('the sandbox is run by bin/crm-sync.js: npm run sandbox', USAGE)
  if (name === undefined) {
    const asked = argv.includes('--help') || argv.includes('-h')
    if (asked) console.log(USAGE)
    else console.error(USAGE)
    return asked ? EXIT.ok : EXIT.usage
  }
  const command = commands.find((candidate) => candidate.name === name)
  if (!command) return usageFailure(`unknown command "${name}"`, USAGE)

  let parsed: ReturnType<typeof parseCommandLine>
  try {
    parsed = parseCommandLine(command, [...argv.slice(0, index), ...argv.slice(index + 1)])
  } catch (error) {
    return usageFailure((error as Error).message, command.usage)
  }
  if (parsed.values.help) {
    console.log(command.usage)
    return EXIT.ok
  }
  if (command === schemaCommand) return runSchema(parsed) // needs no configuration

  const account = parsed.values.account as string | undefined
  if (command === startCommand && account !== undefined)
    return usageFailure('start runs every account: --account is for the other commands', command.usage)
  let config: Config
  try {
    config = loadConfig()
    // start, and migrate and status without --account, work on every account; the others on the one
    // named.
    const every =
      command === startCommand ||
      ((command === migrateCommand || command === statusCommand) && account === undefined)
    if (!every) config = selectAccount(config, account)
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`crm-sync: ${error.message}`)
      return EXIT.usage
    }
    throw error
  }
  const verbose = parsed.values.verbose === true
  const { logger, logs } = commandLogger(command, config, verbose)
  for (const variable of config.removed)
    logger.warn({ variable }, `${variable} is no longer read: ${REMOVED_VARIABLES[variable]}`)
  // Printed past the logger's masking: scrubbed here of the secrets, and of the secret parts of URLs.
  const scrub = secretScrubber(configSecrets(config))
  for (const line of targetLines(config)) console.error(scrub(line))
  const context: CommandContext = {
    config,
    logger,
    logs,
    verbose,
    positionals: parsed.positionals,
    values: parsed.values,
    json: parsed.values.json === true,
  }
  try {
    return await command.run(context)
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error.message, command.usage)
    // An expected condition (a database out of reach, a refused key, a port in use) is one line; the
    // stack of its error only at debug level. Anything else is a bug: its stack is logged with it.
    const expected = expectedFailure(error)
    const message = scrub(expected ?? (error instanceof Error ? error.message : String(error)))
    if (command.service && !expected) logger.error({ err: error }, `${name} failed: ${message}`)
    else {
      logger.debug({ err: error }, `${name} failed`)
      if (command.service) logger.error(`${name} failed: ${message}`)
      else console.error(`crm-sync ${name}: ${expected ? '' : 'failed: '}${message}`)
    }
    return EXIT.failed
  } finally {
    logger.flush()
  }
}

if (import.meta.main) {
  process.exitCode = await run(process.argv.slice(2))
}
