// `crm-sync status`: what the mirror holds and how fresh it is, per resource; the sweeps under way;
// the CRM's hooks with their failure counts; the depth of the job queues and the inbox.
import { createUpstreamClients, createUpstreamMetrics } from '../api-client/index.ts'
import { accountConfigs } from '../config/account-config.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import { collectStatus } from '../status/engine-status.ts'
import { type AccountHealth, accountHealth, worseAccountFirst } from '../status/table-health.ts'
import { forAccount } from '../store/account-schemas.ts'
import type { Db } from '../store/database.ts'
import { accountQueue } from '../sync/account-queue.ts'
import type { JobQueue } from '../sync/job-queue.ts'
import { type Command, type CommandContext, EXIT, UsageError } from './command.ts'
import { quieter } from './command-logger.ts'
import { withExistingDatabase } from './existing-database.ts'
import { describeHooks } from './hooks.ts'
import { openQuietQueue } from './quiet-queue.ts'
import { type HookListing, renderStatus } from './status-view.ts'

// Listing hooks is one CRM request; a CRM that is down or a budget paused by a 429 must not hold
// the rest of the status back.
const HOOKS_TIMEOUT_MS = 15_000

export const statusCommand: Command = {
  name: 'status',
  summary: 'what the mirror holds and how fresh it is, sweeps under way, hooks, queue depth',
  usage: `Usage: crm-sync status [--json] [--no-hooks] [--account <name>]

Shows, per enabled resource: live rows in the mirror, the upstream's count at the last sweep and the
difference (drift), the watermark of incremental sweeps, when the last incremental and full sweeps
succeeded, the last finished sweep and its outcome, and any sweep under way; then the CRM's hooks
with their failure counts, the depth of each job queue and the webhook inbox. With several accounts
(ACCOUNTS_FILE) and no --account, every account's, the worst first ("accounts" in --json).

Options:
  --json      the same as JSON (times in ISO 8601, hooks under "hooks")
  --no-hooks  do not ask the CRM for its hooks (saves one API request, e.g. when polled by a script)
  -h, --help  show this help`,
  options: { 'no-hooks': { type: 'boolean' } },
  json: true,
  run: status,
}

async function listHooks(config: Config, db: Db, logger: Logger): Promise<HookListing> {
  // One attempt with a short timeout: this is a look, not a sync.
  const quick = { ...config, upstream: { ...config.upstream, maxRetries: 0, timeoutSeconds: 10 } }
  const { crm } = createUpstreamClients(quick, { db, logger, metrics: createUpstreamMetrics() })
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the CRM did not answer within ${HOOKS_TIMEOUT_MS / 1000} s`)),
      HOOKS_TIMEOUT_MS,
    )
  })
  try {
    return { hooks: await Promise.race([describeHooks(crm), timeout]), error: null }
  } catch (error) {
    return { hooks: null, error: error instanceof Error ? error.message : String(error) }
  } finally {
    clearTimeout(timer)
  }
}

// Queue depths are all collectStatus asks of the job queue. Without pg-boss's schema (crm-sync migrate
// ran, start did not yet), or without one of its queues (start creates them), there is no job: empty.
function queueCounts(boss: JobQueue | null): JobQueue {
  const getQueueStats = async (name: string) => {
    if (!boss) return []
    return boss.getQueueStats(name).catch((error: unknown) => {
      if (error instanceof Error && /does not exist/.test(error.message)) return []
      throw error
    })
  }
  return { getQueueStats } as unknown as JobQueue
}

interface AccountShown {
  name: string | null
  health: AccountHealth
  collected: Awaited<ReturnType<typeof collectStatus>>
  hooks: HookListing | null
}

const hooksJson = (hooks: HookListing | null) => ({
  hooks: hooks?.hooks ?? null,
  hooks_error: hooks?.error ?? null,
})

function healthLine({ name, health }: AccountShown): string {
  const counts = [
    health.errors ? `${health.errors} table(s) in error` : '',
    health.late ? `${health.late} late` : '',
  ].filter(Boolean)
  return `Account ${name}: ${health.state}${counts.length ? ` (${counts.join(', ')})` : ''}`
}

async function status(context: CommandContext): Promise<number> {
  const { config, logger, verbose, values, positionals, json } = context
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  // Without --account, every account of ACCOUNTS_FILE, side by side, the worst first.
  const several = values.account === undefined && config.accounts.length > 1
  const accounts = several ? accountConfigs(config) : [config]
  return withExistingDatabase(context, 'status', async (database) => {
    const queue = await openQuietQueue(database.url, logger)
    if (queue.status === 'missing') console.error(`note: ${queue.reason}`)
    try {
      const shown = await Promise.all(
        accounts.map(async (account): Promise<AccountShown> => {
          const { name, schemas } = account.account
          const db = forAccount(database.db, schemas)
          const boss = queueCounts(queue.status === 'open' ? accountQueue(queue.boss, name) : null)
          const [collected, hooks] = await Promise.all([
            collectStatus({ db, boss, config: account }),
            // A failure to list them is shown with the hooks: its log lines only with --verbose.
            values['no-hooks'] ? null : listHooks(account, db, quieter(logger, verbose, 'silent')),
          ])
          const health = accountHealth(
            collected.resources,
            new Date(),
            account.incrementalSyncIntervalSeconds,
          )
          return { name, health, collected, hooks }
        }),
      )
      const [one] = shown as [AccountShown]
      if (!several) {
        if (json) console.log(JSON.stringify({ ...one.collected, ...hooksJson(one.hooks) }))
        else console.log(renderStatus(one.collected, one.hooks))
        return EXIT.ok
      }
      shown.sort((a, b) => worseAccountFirst(a.health, b.health))
      if (json) {
        const listed = shown.map((account) => ({
          account: account.name,
          state: account.health.state,
          tables_in_error: account.health.errors,
          tables_late: account.health.late,
          ...account.collected,
          ...hooksJson(account.hooks),
        }))
        console.log(JSON.stringify({ accounts: listed }))
      } else {
        console.log(
          shown
            .map((account) => `${healthLine(account)}\n\n${renderStatus(account.collected, account.hooks)}`)
            .join('\n\n'),
        )
      }
      return EXIT.ok
    } finally {
      if (queue.status === 'open') await queue.boss.stop({ graceful: false })
    }
  })
}
