// The `crm-sync` command line. Exit codes: 0 done, 1 failed, 2 invalid configuration or usage.
import { parseArgs } from 'node:util'
import { type Config, ConfigError, loadConfig } from '../config/index.ts'
import { openDatabase } from '../database-runtime.ts'
import { createLogger, type Logger } from '../log.ts'
import { migrateToLatest } from '../store/migrate.ts'
import { HOOKS_USAGE, hooksCommand } from './hooks.ts'

const SHUTDOWN_TIMEOUT_MS = 30_000

const USAGE = `Usage: crm-sync <command> [options]

Commands:
  start      run migrations, serve HTTP (health, readiness) until SIGTERM or SIGINT
  migrate    apply pending database migrations and exit
  hooks      register, list or remove the CRM webhooks crm-sync needs (crm-sync hooks --help)
  sandbox    serve a simulated CRM and reservation service on loopback (crm-sync sandbox --help)

Options:
  --json      machine-readable output (hooks)
  -h, --help  show this help

Configuration comes from the environment and a .env file in the working directory (see README.md).`

type Command = (config: Config, logger: Logger, args: string[], json: boolean) => Promise<number>

async function startCommand(config: Config, logger: Logger): Promise<number> {
  const { start } = await import('../main.ts')
  const running = await start(config, logger)
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'))
    process.once('SIGINT', () => resolve('SIGINT'))
  })
  logger.info({ signal }, 'shutting down')
  const timeout = new Promise<'timeout'>((resolve) =>
    setTimeout(resolve, SHUTDOWN_TIMEOUT_MS, 'timeout').unref(),
  )
  const outcome = await Promise.race([running.stop().then(() => 'stopped' as const), timeout])
  if (outcome === 'timeout') {
    logger.error({ timeoutMs: SHUTDOWN_TIMEOUT_MS }, 'shutdown did not finish in time')
    return 1
  }
  return 0
}

async function migrateCommand(config: Config, logger: Logger): Promise<number> {
  const database = await openDatabase(config, logger)
  try {
    const applied = await migrateToLatest(database.db)
    logger.info({ applied }, applied.length ? `applied ${applied.length} migration(s)` : 'schema up to date')
    return 0
  } finally {
    await database.close()
  }
}

const commands: Record<string, Command> = {
  start: startCommand,
  migrate: migrateCommand,
  hooks: hooksCommand,
}

export async function run(argv: string[]): Promise<number> {
  // The sandbox plays the upstream services, needs no configuration of crm-sync's own, and has its own options.
  if (argv[0] === 'sandbox') {
    const { runSandboxCommand } = await import('../sandbox/index.ts')
    return runSandboxCommand(argv.slice(1))
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
  })
  const [name] = positionals
  if (values.help && name === 'hooks') {
    console.log(HOOKS_USAGE)
    return 0
  }
  if (values.help || !name) {
    console.log(USAGE)
    return name || values.help ? 0 : 2
  }
  const command = commands[name]
  if (!command) {
    console.error(`crm-sync: unknown command "${name}"\n\n${USAGE}`)
    return 2
  }

  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`crm-sync: ${error.message}`)
      return 2
    }
    throw error
  }
  const logger = createLogger({ level: config.logLevel })
  try {
    return await command(config, logger, positionals.slice(1), values.json === true)
  } catch (error) {
    logger.error({ err: error }, `${name} failed: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  } finally {
    logger.flush()
  }
}

if (import.meta.main) {
  process.exitCode = await run(process.argv.slice(2))
}
