// `crm-sync start`: the service, until SIGTERM or SIGINT, then a shutdown bounded in time.
import { missingNodeFlags } from '../../bin/node-flags.js'
import { type Command, EXIT } from './command.ts'

export const startCommand: Command = {
  name: 'start',
  summary: 'run migrations, register hooks, serve HTTP and run the workers until SIGTERM or SIGINT',
  usage: `Usage: crm-sync start

Starts the database (embedded when DATABASE_URL is not set), applies pending migrations, registers the
CRM hooks (when PUBLIC_URL is set), serves HTTP on PORT (webhooks, /healthz, /readyz) and runs the
sync workers and schedules. SIGTERM or SIGINT stops it within SHUTDOWN_TIMEOUT_SECONDS (default 30):
no new deliveries are taken, requests under way may finish, active jobs may finish (the rest stay
queued), the pool is closed. At that deadline every connection left is closed and the exit code is 1.`,
  options: {},
  service: true,
  async run({ config, logger }) {
    // bin/crm-sync.js (npm start, the image) runs Node with them; a hand-written `node src/...` may not.
    const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS)
    if (missing.length) {
      logger.warn(
        { missing },
        'Node runs without the V8 flags of bin/node-flags.js: a full sweep may peak near 350 MB instead of 200 MB; start with bin/crm-sync.js or set them',
      )
    }
    const { start } = await import('../service.ts')
    const running = await start(config, logger)
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'))
      process.once('SIGINT', () => resolve('SIGINT'))
    })
    logger.info({ signal }, 'shutting down')
    // A container orchestrator kills after its own grace period (Docker: 10 s unless told otherwise,
    // compose.yaml gives 40 s; Kubernetes 30 s): the shutdown must end before it.
    const timeoutMs = config.shutdownTimeoutSeconds * 1000
    const outcome = await running.stop({ deadline: Date.now() + timeoutMs })
    if (outcome === 'deadline') {
      logger.error({ timeoutMs }, 'shutdown did not finish in time')
      // Whatever still holds the event loop (a query the database never answers) must not keep the
      // process beyond its deadline: past a last moment for the logs, it ends.
      setTimeout(() => process.exit(EXIT.failed), 500).unref()
      return EXIT.failed
    }
    return EXIT.ok
  },
}
