// `crm-sync runs`: the run history, newest first, as GET /admin/runs lists it; `crm-sync cancel`: ends
// the unfinished sweeps of a run as POST /admin/runs/:id/cancel does. Neither creates nor migrates a
// database (existing-database.ts).
import { findResource } from '../resources/index.ts'
import { cancelRun, listRuns, MAX_RUN_PAGE, runJson, runPageJson } from '../status/run-history.ts'
import type { RunView } from '../store/runs.ts'
import { relayRunEnd } from '../sync/run-report.ts'
import { sweepEnqueuer } from '../sync/runs.ts'
import { type Command, type CommandContext, EXIT, UsageError } from './command.ts'
import { withExistingDatabase } from './existing-database.ts'
import { openSendingQueue } from './quiet-queue.ts'
import { runSummary } from './run-summary.ts'
import { runsTable } from './runs-view.ts'

export const runsCommand: Command = {
  name: 'runs',
  summary: 'the run history, newest first: outcome, duration, records, requests, errors',
  usage: `Usage: crm-sync runs [--failed] [--resource <name>] [--limit <n>] [--before <run id>] [--json]

Lists the runs, newest first: id, mode, status, who asked for it, when it started, how long it took
(so far, for one under way), the records its sweeps read, the API requests they made, and the start
of its error (--json shows all of it, and each run's sweeps). Reads the database only: it neither
creates nor migrates one (crm-sync migrate or start does).

Options:
  --failed           only failed runs (a cancelled run is failed)
  --resource <name>  only runs that swept this resource, e.g. crm.people
  --limit <n>        at most n runs (default 20, at most ${MAX_RUN_PAGE})
  --before <run id>  only runs older than this one: the next page
  --json             {"runs": [...], "next_before": id or null}, each run as GET /admin/runs/:id shows it
  -h, --help         show this help

Exit codes: 0 listed, 1 no database or no schema, 2 invalid usage or configuration.`,
  options: {
    failed: { type: 'boolean' },
    resource: { type: 'string' },
    limit: { type: 'string' },
    before: { type: 'string' },
  },
  json: true,
  run: runs,
}

export const cancelCommand: Command = {
  name: 'cancel',
  summary: 'cancel a run: its unfinished sweeps end as failed',
  usage: `Usage: crm-sync cancel <run id> [--json]

Ends every queued or running sweep of the run as failed ("cancelled by cli"); the run is then failed.
A sweep running in a crm-sync process stops at its next checkpoint (after the page it is reading),
and the next sweep waiting for its resource starts. Needs the schema, and creates no embedded cluster;
it migrates nothing (only a job queue that crm-sync start has not set up yet is set up as start does).

Options:
  --json      the run as GET /admin/runs/:id shows it
  -h, --help  show this help

Exit codes: 0 cancelled, 1 no such run, a run that had already finished, or no schema; 2 invalid usage
or configuration.`,
  options: {},
  json: true,
  run: cancel,
}

function wholeNumber(name: string, value: unknown, max?: number): number | undefined {
  if (value === undefined) return undefined
  const text = String(value)
  const number = Number(text)
  if (!/^[1-9]\d{0,14}$/.test(text) || (max !== undefined && number > max)) {
    throw new UsageError(`${name} must be a whole number from 1${max ? ` to ${max}` : ''}, got "${text}"`)
  }
  return number
}

async function runs(context: CommandContext): Promise<number> {
  const { values, positionals, json } = context
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  const limit = wholeNumber('--limit', values.limit, MAX_RUN_PAGE)
  const before = wholeNumber('--before', values.before)
  const resource = values.resource === undefined ? undefined : String(values.resource)
  if (resource !== undefined && !findResource(resource)) {
    throw new UsageError(`unknown resource ${resource} (crm-sync resync --help lists the resources)`)
  }
  return withExistingDatabase(context, 'runs', async ({ db }) => {
    const page = await listRuns(db, {
      limit,
      before,
      resource,
      statuses: values.failed ? ['failed'] : undefined,
    })
    if (json) console.log(JSON.stringify(runPageJson(page)))
    else if (page.runs.length === 0) console.log('no runs')
    else {
      console.log(runsTable(page.runs))
      if (page.nextBefore !== null) console.log(`\nolder runs: crm-sync runs --before ${page.nextBefore}`)
    }
    return EXIT.ok
  })
}

async function cancel(context: CommandContext): Promise<number> {
  const { positionals, json, logger, config } = context
  if (positionals.length !== 1) throw new UsageError('name one run id: crm-sync cancel <run id>')
  const runId = wholeNumber('the run id', positionals[0]) as number
  return withExistingDatabase(context, 'cancel', async ({ db, url }) => {
    // The job queue sends the job of the sweep that waited for a resource this run held.
    const boss = await openSendingQueue(url, logger, config.account.name)
    try {
      const relay = relayRunEnd(boss)
      const result = await cancelRun({ db, enqueue: sweepEnqueuer(boss), relay }, runId, 'cli')
      if (result.status === 'unknown') {
        console.error(`crm-sync cancel: no run ${runId}`)
        return EXIT.failed
      }
      if (result.status === 'finished') {
        console.error(`crm-sync cancel: run ${runId} has already finished (${result.run.status})`)
        if (json) console.log(JSON.stringify(runJson(result.run)))
        return EXIT.failed
      }
      console.log(json ? JSON.stringify(runJson(result.run)) : cancelled(result.run, result.resources))
      return EXIT.ok
    } finally {
      await boss.stop({ graceful: false })
    }
  })
}

function cancelled(run: RunView, resources: string[]): string {
  const running = run.resources.some((sweep) => resources.includes(sweep.resource) && sweep.started_at)
  const note = running ? '; a sweep under way stops at its next checkpoint' : ''
  return `run ${run.id} cancelled: ${resources.join(', ')} ended as failed${note}\n\n${runSummary(run)}`
}
