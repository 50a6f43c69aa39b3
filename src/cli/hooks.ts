// `crm-sync hooks register|list|remove`.
import { createUpstreamClients, createUpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import { openDatabase } from '../database-runtime.ts'
import type { Logger } from '../log.ts'
import { isOwnHook, maskTarget, registerHooks, removeHooks } from '../receiver/registration.ts'
import { migrateToLatest } from '../store/migrate.ts'

export const HOOKS_USAGE = `Usage: crm-sync hooks <register|list|remove> [--json]

  register  create the 12 hooks crm-sync needs under PUBLIC_URL, replace its outdated ones
  list      show every hook of the CRM account: model, event, object type, target, failures
  remove    delete crm-sync's own hooks (hooks of other tools stay)`

export async function hooksCommand(
  config: Config,
  logger: Logger,
  args: string[],
  json: boolean,
): Promise<number> {
  const [action] = args
  if (!action || !['register', 'list', 'remove'].includes(action)) {
    console.error(HOOKS_USAGE)
    return 2
  }
  if (action === 'register' && (!config.publicUrl || !config.webhookSecret)) {
    console.error('crm-sync: hooks register needs PUBLIC_URL and WEBHOOK_SECRET')
    return 2
  }
  const database = await openDatabase(config, logger)
  try {
    await migrateToLatest(database.db) // the shared request budget lives in the database
    const { crm } = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    if (action === 'register') {
      const result = await registerHooks(database.db, crm, {
        publicUrl: config.publicUrl as string,
        secret: config.webhookSecret as string,
        objectType: config.hookObjectType,
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
    } else if (action === 'remove') {
      const removed = await removeHooks(database.db, crm)
      console.log(json ? JSON.stringify({ removed: removed.length }) : `hooks: ${removed.length} removed`)
    } else {
      const hooks = (await crm.listHooks()).map((hook) => ({
        id: hook.id,
        owner: isOwnHook(hook) ? 'crm-sync' : 'other',
        model: hook.model,
        event: hook.event,
        object_type: hook.object_type,
        target_url: maskTarget(hook.target_url),
        failed: hook.failed ?? 0,
        failed_at: hook.failed_at ?? null,
      }))
      if (json) console.log(JSON.stringify(hooks))
      else if (hooks.length === 0) console.log('no hooks')
      else console.table(hooks)
    }
    return 0
  } finally {
    await database.close()
  }
}
