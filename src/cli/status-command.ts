// `crm-sync status`: what the mirror holds and how fresh it is, per resource; the sweeps under way;
// the CRM's hooks with their failure counts; the depth of the job queues and the inbox.
import { createUpstreamClients, createUpstreamMetrics } from '../api-client/index.ts'
import type { Config } from '../config/index.ts'
import type { Logger } from '../log.ts'
import { collectStatus } from '../status/engine-status.ts'
import type { Db } from '../store/database.ts'
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
  usage: `Usage: crm-sync status [--json] [--no-hooks]

Shows, per enabled resource: live rows in the mirror, the upstream's count at the last sweep and the
difference (drift), the watermark of incremental sweeps, when the last incremental and full sweeps
succeeded, the last finished sweep and its outcome, and any sweep under way; then the CRM's hooks
with their failure counts, the depth of each job queue and the webhook inbox.

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

async function status(context: CommandContext): Promise<number> {
  const { config, logger, verbose, values, positionals, json } = context
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  return withExistingDatabase(context, 'status', async (database) => {
    const queue = await openQuietQueue(database.url, logger, config.account.name)
    if (queue.status === 'missing') console.error(`note: ${queue.reason}`)
    const boss = queueCounts(queue.status === 'open' ? queue.boss : null)
    try {
      const [collected, hooks] = await Promise.all([
        collectStatus({ db: database.db, boss, config }),
        // A failure to list them is shown with the hooks: its log lines only with --verbose.
        values['no-hooks'] ? null : listHooks(config, database.db, quieter(logger, verbose, 'silent')),
      ])
      if (json) {
        console.log(
          JSON.stringify({ ...collected, hooks: hooks?.hooks ?? null, hooks_error: hooks?.error ?? null }),
        )
      } else {
        console.log(renderStatus(collected, hooks))
      }
      return EXIT.ok
    } finally {
      if (queue.status === 'open') await queue.boss.stop({ graceful: false })
    }
  })
}
