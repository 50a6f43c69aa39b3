// `crm-sync hooks register|list|remove`.
import { unsharedBudget } from '../api-client/budget.ts'
import { type CrmClient, createUpstreamClients, createUpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import { isOwnHook, maskTarget, registerHooks, removeHooks } from '../hooks/registration.ts'
import type { Logger } from '../log.ts'
import { migrateToLatest } from '../store/migrate.ts'
import { type Command, EXIT, UsageError } from './command.ts'
import { quieter } from './command-logger.ts'
import { openCommandDatabase } from './database.ts'
import { withExistingDatabase } from './existing-database.ts'
import { formatTable } from './table.ts'

const ACTIONS = ['register', 'list', 'remove']

export const hooksCommand: Command = {
  name: 'hooks',
  summary: 'register, list or remove the CRM webhooks crm-sync needs',
  usage: `Usage: crm-sync hooks <register|list|remove> [--json]

  register  create the 12 hooks crm-sync needs under PUBLIC_URL, replace its outdated ones
  list      show every hook of the CRM account: model, event, object type, target, failures
            (reads only: creates no embedded cluster and migrates nothing)
  remove    delete crm-sync's own hooks (hooks of other tools stay)

Options:
  --json      machine-readable output
  -h, --help  show this help`,
  options: {},
  json: true,
  run: ({ config, logger, verbose, positionals, json }) =>
    // The command says what failed in one line: the log lines of its requests (a refused key,
    // retries) only with --verbose.
    hooks(config, { logger, requests: quieter(logger, verbose, 'silent') }, positionals, json),
}

interface Loggers {
  logger: Logger
  /** The logger of the upstream clients. */
  requests: Logger
}

async function hooks(config: Config, loggers: Loggers, args: string[], json: boolean): Promise<number> {
  const { logger } = loggers
  const [action, ...extra] = args
  if (!action || !ACTIONS.includes(action) || extra.length > 0) {
    throw new UsageError(action ? `unknown action "${[action, ...extra].join(' ')}"` : 'which action?')
  }
  if (action === 'register' && (!config.publicUrl || !config.webhookSecret)) {
    console.error('crm-sync: hooks register needs PUBLIC_URL and WEBHOOK_SECRET')
    return EXIT.usage
  }
  if (action === 'list') return listHooks(config, loggers, json)
  const database = await openCommandDatabase(config, logger)
  try {
    await migrateToLatest(database.db) // the shared request budget lives in the database
    const { crm } = createUpstreamClients(config, {
      db: database.db,
      logger: loggers.requests,
      metrics: createUpstreamMetrics(),
    })
    if (action === 'register') {
      const result = await registerHooks(database.db, crm, {
        publicUrl: config.hooksUrl as string,
        secret: config.webhookSecret as string,
        objectType: config.hookObjectType,
        resources: config.resources,
      })
      const summary = {
        created: result.created.length,
        deleted: result.deleted.length,
        kept: result.kept.length,
        foreign: result.foreign.length,
      }
      console.log(
        json
          ? JSON.stringify(summary)
          : `hooks: ${summary.created} created, ${summary.deleted} deleted, ${summary.kept} kept, ${summary.foreign} of other tools left alone`,
      )
    } else {
      const removed = await removeHooks(database.db, crm)
      console.log(json ? JSON.stringify({ removed: removed.length }) : `hooks: ${removed.length} removed`)
    }
    return EXIT.ok
  } finally {
    await database.close()
  }
}

/** `hooks list`: the database only for the shared request budget, when its schema holds one. */
function listHooks(config: Config, { logger, requests }: Loggers, json: boolean): Promise<number> {
  const context = { config, logger }
  return withExistingDatabase(
    context,
    'hooks list',
    async ({ db, migrated }) => {
      const metrics = createUpstreamMetrics()
      const budget = migrated ? {} : { budget: unsharedBudget() }
      const { crm } = createUpstreamClients(config, { db, logger: requests, metrics, ...budget })
      const hooks = await describeHooks(crm)
      if (json) console.log(JSON.stringify(hooks))
      else if (hooks.length === 0) console.log('no hooks')
      else console.log(hooksTable(hooks))
      return EXIT.ok
    },
    { schema: 'optional' },
  )
}

/** Every hook of the CRM account, crm-sync's and other tools', with the secret in targets masked. */
export async function describeHooks(crm: CrmClient) {
  return (await crm.listHooks()).map((hook) => ({
    id: hook.id,
    owner: isOwnHook(hook) ? ('crm-sync' as const) : ('other' as const),
    model: hook.model,
    event: hook.event,
    object_type: hook.object_type,
    target_url: maskTarget(hook.target_url),
    failed: hook.failed ?? 0,
    failed_at: hook.failed_at ?? null,
  }))
}

export type HookRow = Awaited<ReturnType<typeof describeHooks>>[number]

export function hooksTable(hooks: HookRow[]): string {
  return formatTable(
    [
      { header: 'id', align: 'right' },
      { header: 'owner' },
      { header: 'model' },
      { header: 'event' },
      { header: 'object type' },
      { header: 'failed', align: 'right' },
      { header: 'last failure' },
      { header: 'target' },
    ],
    hooks.map((hook) => [
      String(hook.id),
      hook.owner,
      String(hook.model ?? ''),
      String(hook.event ?? ''),
      String(hook.object_type ?? ''),
      String(hook.failed),
      hook.failed_at ? String(hook.failed_at) : '-',
      hook.target_url,
    ]),
  )
}
