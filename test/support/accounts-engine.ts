// One crm-sync started as `npm start` composes it, with an ACCOUNTS_FILE of simulated upstreams (one
// sandbox per account, keys and webhook secrets by environment variable), and stopped with them.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Sandbox } from '../../sandbox/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createLogger } from '../../src/log.ts'
import { type Running, start } from '../../src/service.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import type { Db } from '../../src/store/database.ts'
import { removeWorkdirs, workdir } from '../cli/run.ts'
import { dropTestDatabase, type TestDatabase } from './database.ts'

export interface AccountsEngine<Name extends string> {
  engine: Running
  /** ACCOUNTS_FILE, DATABASE_URL and the keys: what a command of the CLI needs. */
  env: Record<string, string>
  /** The folder of the accounts file, for the CLI's working directory. */
  cwd: string
  /** Each account's schemas. */
  dbs: Record<Name, Db>
  stop(): Promise<void>
}

const variable = (name: string, what: string) => `${name.toUpperCase()}_${what}`

/** The accounts file of `sandboxes`; `rateLimit` set: each key's budget, otherwise the real one. */
function accountsFile(sandboxes: Record<string, Sandbox>, rateLimit?: number): string {
  const limit = rateLimit === undefined ? '' : `, rate_limit: ${rateLimit}`
  return `accounts:\n${Object.entries(sandboxes)
    .map(
      ([name, sandbox]) => `  ${name}:
    crm: { base_url: ${sandbox.crmUrl}, api_key_env: ${variable(name, 'CRM_KEY')}${limit} }
    reservation: { base_url: ${sandbox.reservationUrl}, api_key_env: ${variable(name, 'RES_KEY')}${limit} }
    webhook_secret_env: ${variable(name, 'WEBHOOK_SECRET')}
`,
    )
    .join('')}`
}

/**
 * Starts the engine on `database` for the accounts of `sandboxes`, with its hooks at its own port;
 * `settings` are further variables (DETAILS_BUDGET_PERCENT is 0 unless they say otherwise).
 * `stop()` stops the engine and the sandboxes and drops the database.
 */
export async function startAccountsEngine<Name extends string>(
  database: TestDatabase,
  sandboxes: Record<Name, Sandbox>,
  options: { rateLimit?: number; settings?: Record<string, string> } = {},
): Promise<AccountsEngine<Name>> {
  const cwd = await workdir()
  const file = join(cwd, 'accounts.yaml')
  await writeFile(file, accountsFile(sandboxes, options.rateLimit))
  const port = await freePort()
  const env = {
    ACCOUNTS_FILE: file,
    DATABASE_URL: database.url,
    ...Object.fromEntries(
      Object.entries<Sandbox>(sandboxes).flatMap(([name, sandbox]) => [
        [variable(name, 'CRM_KEY'), sandbox.crmApiKey],
        [variable(name, 'RES_KEY'), sandbox.reservationApiKey],
        [variable(name, 'WEBHOOK_SECRET'), `${name}-webhook-secret-0123456789`],
      ]),
    ),
  }
  const config = parseConfig({
    ...env,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DETAILS_BUDGET_PERCENT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.settings,
  })
  const engine = await start(config, createLogger({ level: config.logLevel, pretty: false }))
  const dbs = Object.fromEntries(
    Object.keys(sandboxes).map((name) => [name, forAccount(database.db, accountSchemas(name))]),
  ) as Record<Name, Db>
  return {
    engine,
    env,
    cwd,
    dbs,
    async stop() {
      await engine.stop()
      for (const sandbox of Object.values<Sandbox>(sandboxes)) await sandbox.stop()
      await dropTestDatabase(database)
      await removeWorkdirs()
    },
  }
}
