// `crm-sync check`: whether what the configuration names can be used, one line each: the database
// (reached, migrated), the publication and history, each upstream's key (one cheap authenticated
// request), the CRM's hooks for PUBLIC_URL, and whether PUBLIC_URL answers. It changes nothing: no migration, no hook registered.
// A database out of reach or refusing the login fails its line only: the keys, the hooks and PUBLIC_URL
// need none, so they are checked all the same.
import { sql } from 'kysely'
import { unsharedBudget } from '../api-client/budget.ts'
import type { Hook } from '../api-client/crm.ts'
import { createUpstreamClients, createUpstreamMetrics, UpstreamAuthError } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import { databaseLocation } from '../database/runtime.ts'
import { isOwnHook } from '../hooks/registration.ts'
import type { Logger } from '../log.ts'
import { users } from '../resources/crm.ts'
import { contacts } from '../resources/reservation.ts'
import type { Db } from '../store/database.ts'
import { inspectHistory } from '../store/history.ts'
import { appliedMigrationCount, migrationFileCount } from '../store/migrate.ts'
import { inspectPublication } from '../store/publication.ts'
import { type Command, type CommandContext, EXIT, UsageError } from './command.ts'
import { quieter } from './command-logger.ts'
import { missingDatabase, openExistingDatabase } from './existing-database.ts'

export type CheckOutcome = 'ok' | 'warn' | 'fail' | 'skip'

export interface CheckLine {
  check: 'database' | 'publication' | 'history' | 'crm' | 'reservation' | 'hooks' | 'public-url'
  outcome: CheckOutcome
  detail: string
}

export const checkCommand: Command = {
  name: 'check',
  summary: 'test the database, both API keys, the hooks and PUBLIC_URL, one line each',
  usage: `Usage: crm-sync check [--json]

Tests what the configuration names, and says what is wrong in one line each:
  database     reached, and how many of its migrations are applied (without DATABASE_URL, an embedded
               cluster not created yet is a warning: crm-sync start creates it; out of reach, the
               checks below that need no database run all the same)
  publication  the logical replication publication of the mirror (MIRROR_PUBLICATION)
  history      whether every main table's writes make versions in schema history, and its size
  crm          CRM_API_KEY: one authenticated request (the users index, one record)
  reservation  RESERVATION_API_KEY: one authenticated request (the contacts index, one record)
  hooks        the CRM's hooks that point at PUBLIC_URL (with PUBLIC_URL and WEBHOOK_SECRET)
  public-url   whether PUBLIC_URL/healthz answers (a warning only: crm-sync start may not run yet)
Changes nothing: no embedded cluster created, no migration, no hook registered. Exits 0 when nothing
failed, 1 otherwise.

Options:
  --json      the lines as JSON
  -h, --help  show this help`,
  options: {},
  json: true,
  run: check,
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

async function checkDatabase(db: Db | null, config: Config): Promise<{ line: CheckLine; migrated: boolean }> {
  if (!db) {
    const detail =
      `DATABASE_URL is not set and there is no embedded PostgreSQL in ${config.dataDir} yet (crm-sync ` +
      'start creates it there; if crm-sync runs elsewhere, run this there or set DATA_DIR or DATABASE_URL)'
    return { line: { check: 'database', outcome: 'warn', detail }, migrated: false }
  }
  try {
    await sql`select 1`.execute(db)
  } catch (error) {
    return { line: { check: 'database', outcome: 'fail', detail: message(error) }, migrated: false }
  }
  const files = await migrationFileCount()
  let applied = 0
  try {
    applied = await appliedMigrationCount(db)
  } catch {
    applied = 0 // no migration table yet
  }
  const migrated = applied >= files
  const detail = `reached; ${applied} of ${files} migrations applied${migrated ? '' : ' (crm-sync migrate or start applies them)'}`
  return { line: { check: 'database', outcome: migrated ? 'ok' : 'warn', detail }, migrated }
}

async function keyLine(check: 'crm' | 'reservation', base: string, ask: () => Promise<unknown>) {
  try {
    await ask()
    return { check, outcome: 'ok', detail: `${base}: the key is accepted` } satisfies CheckLine
  } catch (error) {
    const what = error instanceof UpstreamAuthError ? 'the key is refused: ' : ''
    return { check, outcome: 'fail', detail: `${base}: ${what}${message(error)}` } satisfies CheckLine
  }
}

async function hooksLine(listHooks: () => Promise<Hook[]>, publicUrl: string): Promise<CheckLine> {
  const base = publicUrl.replace(/\/+$/, '')
  try {
    const own = (await listHooks()).filter(
      (hook) => isOwnHook(hook) && hook.target_url?.startsWith(`${base}/`),
    )
    return {
      check: 'hooks',
      outcome: own.length > 0 ? 'ok' : 'warn',
      detail: `${own.length} hooks of crm-sync point at ${publicUrl}${own.length ? '' : ' (crm-sync start registers them)'}`,
    }
  } catch (error) {
    return { check: 'hooks', outcome: 'fail', detail: `cannot list the CRM's hooks: ${message(error)}` }
  }
}

async function publicUrlLine(publicUrl: string): Promise<CheckLine> {
  const url = `${publicUrl.replace(/\/+$/, '')}/healthz`
  try {
    const answer = await fetch(url, { signal: AbortSignal.timeout(5_000) })
    return answer.ok
      ? { check: 'public-url', outcome: 'ok', detail: `${publicUrl} answers /healthz` }
      : { check: 'public-url', outcome: 'warn', detail: `${publicUrl}/healthz answered ${answer.status}` }
  } catch (error) {
    return {
      check: 'public-url',
      outcome: 'warn',
      detail: `${publicUrl}/healthz did not answer (${message(error)}); is crm-sync start running behind it?`,
    }
  }
}

/** A check's line, or its failure's: a database that breaks half-way fails that line, not the rest. */
async function lineOf(check: CheckLine['check'], look: () => Promise<CheckLine>): Promise<CheckLine> {
  try {
    return await look()
  } catch (error) {
    return { check, outcome: 'fail', detail: message(error) }
  }
}

async function publicationLine(db: Db, config: Config): Promise<CheckLine> {
  // The publication holds every account's mirror tables, whichever account is checked.
  const accounts = config.accounts.map((account) => account.schemas)
  const { state, detail } = await inspectPublication(db, config.mirrorPublication, accounts)
  const outcome = state === 'off' ? 'skip' : state === 'skipped' ? 'warn' : 'ok'
  return { check: 'publication', outcome, detail }
}

async function historyLine(db: Db): Promise<CheckLine> {
  const { state, detail } = await inspectHistory(db)
  return { check: 'history', outcome: state === 'current' ? 'ok' : 'warn', detail }
}

/** What the upstream checks need of the database: the shared budget, once the schema holds it. */
interface BudgetDatabase {
  db: Db | null
  migrated: boolean
}

/** The checks that need no database: each key, the CRM's hooks and PUBLIC_URL. */
async function upstreamChecks(
  config: Config,
  database: BudgetDatabase,
  logger: Logger,
): Promise<CheckLine[]> {
  // One attempt each, quickly: this is a look, not a sync.
  const quick = { ...config, upstream: { ...config.upstream, maxRetries: 0, timeoutSeconds: 10 } }
  const clients = createUpstreamClients(quick, {
    db: database.db as Db, // used by the shared budget only, and an unmigrated database gets none
    logger,
    metrics: createUpstreamMetrics(),
    ...(database.db && database.migrated ? {} : { budget: unsharedBudget() }),
  })
  const lines: CheckLine[] = [
    await keyLine('crm', config.crm.baseUrl, () => clients.crm.index(users, { page: 1, perPage: 1 })),
  ]
  const { reservation } = clients
  lines.push(
    reservation && config.reservation
      ? await keyLine('reservation', config.reservation.baseUrl, () =>
          reservation.index(contacts, { page: 1, perPage: 1 }),
        )
      : { check: 'reservation', outcome: 'skip', detail: 'RESERVATION_BASE_URL is not set' },
  )
  if (!config.publicUrl || !config.webhookSecret) {
    lines.push({ check: 'hooks', outcome: 'skip', detail: 'PUBLIC_URL or WEBHOOK_SECRET is not set' })
    return lines
  }
  lines.push(await hooksLine(() => clients.crm.listHooks(), config.hooksUrl ?? config.publicUrl))
  lines.push(await publicUrlLine(config.publicUrl))
  return lines
}

/** The checks, on `db`; null: no database yet (no embedded cluster), whose keys are checked all the same. */
export async function runChecks(config: Config, db: Db | null, logger: Logger): Promise<CheckLine[]> {
  const database = await checkDatabase(db, config)
  const lines: CheckLine[] = [database.line]
  if (db && database.migrated) {
    lines.push(
      await lineOf('publication', () => publicationLine(db, config)),
      await lineOf('history', () => historyLine(db)),
    )
  }
  const upstream = await upstreamChecks(config, { db, migrated: database.migrated }, logger)
  return [...lines, ...upstream]
}

export function renderChecks(lines: CheckLine[]): string {
  const width = Math.max(...lines.map((line) => line.check.length))
  return lines
    .map((line) => `${line.outcome.padEnd(4)}  ${line.check.padEnd(width)}  ${line.detail}`)
    .join('\n')
}

async function checksOf(config: Config, logger: Logger): Promise<CheckLine[]> {
  if (missingDatabase(config)) return runChecks(config, null, logger)
  let database: Awaited<ReturnType<typeof openExistingDatabase>>
  try {
    database = await openExistingDatabase(config, logger, { schema: 'optional' })
  } catch (error) {
    // Out of reach or refusing the login: what needs no database is checked all the same.
    const line: CheckLine = { check: 'database', outcome: 'fail', detail: message(error) }
    return [line, ...(await upstreamChecks(config, { db: null, migrated: false }, logger))]
  }
  try {
    const where = database.embedded
      ? `embedded PostgreSQL in ${config.dataDir}`
      : databaseLocation(database.url)
    const lines = await runChecks(config, database.db, logger)
    return lines.map((line) =>
      line.check === 'database' ? { ...line, detail: `${where}: ${line.detail}` } : line,
    )
  } finally {
    await database.close()
  }
}

async function check({ config, logger, verbose, positionals, json }: CommandContext): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  // Each check says what failed in its line: the log lines of its requests only with --verbose.
  const lines = await checksOf(config, quieter(logger, verbose, 'silent'))
  console.log(json ? JSON.stringify({ checks: lines }) : renderChecks(lines))
  return lines.some((line) => line.outcome === 'fail') ? EXIT.failed : EXIT.ok
}
