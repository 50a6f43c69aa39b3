// `crm-sync resync`: starts a run (incremental, or full with --full) of every enabled resource or of
// the ones named, exactly as a schedule or the admin API would: its sweeps are jobs for the workers of
// any running crm-sync. With --wait it follows the run to its end (see follow-run.ts).
import { resourceNames } from '../resources/index.ts'
import type { Db } from '../store/database.ts'
import { migrateToLatest } from '../store/migrate.ts'
import type { RunMode } from '../store/schema.ts'
import { accountQueue } from '../sync/account-queue.ts'
import { type JobQueue, startJobQueue } from '../sync/job-queue.ts'
import { RunRequestError, runDeps, type StartRunResult, startRun, sweepEnqueuer } from '../sync/runs.ts'
import { type Command, type CommandContext, EXIT, stringList, UsageError } from './command.ts'
import { quieter } from './command-logger.ts'
import { openCommandDatabase } from './database.ts'
import { followRun } from './follow-run.ts'
import { handBack } from './hand-back.ts'
import { otherProcessesLive } from './local-sweep-worker.ts'
import { createRunProgress, notesOnly } from './run-progress.ts'
import { runSummary } from './run-summary.ts'

export const resyncCommand: Command = {
  name: 'resync',
  summary: 'start a sweep of every resource (or of some); --wait follows it to the end',
  usage: `Usage: crm-sync resync [--full] [--resource <name> ...] [--wait] [--json]

Starts a run: one sweep per resource, taken by the workers of any running crm-sync.
An incremental sweep reads the records changed since the last one (and goes on to every page when the
upstream's count and the live rows disagree); a full sweep reads every page and checks each row it
did not see with the upstream, tombstoning the ones that are gone.

Options:
  --full             full sweeps instead of incremental ones
  --resource <name>  a resource to sweep (repeatable), e.g. --resource crm.people; default: every
                     enabled one of ${resourceNames.filter((name) => name.startsWith('crm.')).join(', ')},
                     ${resourceNames.filter((name) => !name.startsWith('crm.')).join(', ')}
  --wait             follow the run: a progress bar per resource (plain lines when not a terminal),
                     then a summary; exits 1 when the run failed. When no crm-sync is running on the
                     database, or none takes the run within 10 s, the sweeps run in this process.
                     Ctrl-C hands them back (they resume from their checkpoints) and says which
                     sweeps had finished, and who goes on with the run: the crm-sync running on the
                     database, or the next start.
  --json             print {"run_id": n}, and "covered" when resources are left out (see below);
                     with --wait, the finished run (and "covered")
  -h, --help         show this help

A sweep whose resource another sweep holds waits for it (an incremental sweep makes way for a full
one at its next page). A resource that a run already queued or running covers (a full one, for
--full) is left out of the run started, and named with that run. When such a run covers every
resource asked for, no run is started: that run is named, and --wait follows it.

Exit codes: 0 started or already under way (with --wait: succeeded), 1 failed, 2 invalid usage or
configuration, 130 interrupted.`,
  options: {
    full: { type: 'boolean' },
    resource: { type: 'string', multiple: true },
    wait: { type: 'boolean' },
  },
  json: true,
  run: resync,
}

interface Session extends CommandContext {
  db: Db
  boss: JobQueue
}

async function resync(context: CommandContext): Promise<number> {
  const { config, logger, positionals } = context
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  const database = await openCommandDatabase(config, logger)
  let session: Session | undefined
  try {
    await migrateToLatest(database.db)
    session = {
      ...context,
      db: database.db,
      boss: accountQueue(
        await startJobQueue(database.url, logger, [config.account.name]),
        config.account.name,
      ),
    }
    return await startAndFollow(session)
  } finally {
    // A sweep still running here after its run ended (another run's) is handed back as a failed job
    // attempt, and its retry resumes from the checkpoint.
    await session?.boss.stop({ graceful: true, timeout: 5000 })
    await database.close()
  }
}

async function startAndFollow(session: Session): Promise<number> {
  const { config, values, json, db, boss } = session
  const mode = values.full ? 'full' : 'incremental'
  const names = stringList(values.resource)
  const runs = runDeps(config, db, sweepEnqueuer(boss))
  const started = await startRun(runs, {
    mode,
    resources: names.length ? names : undefined,
    requestedBy: 'cli',
  }).catch((error: unknown) => {
    if (error instanceof RunRequestError) return { status: 'refused' as const, reason: error.message }
    throw error
  })
  if (started.status === 'refused') {
    console.error(`crm-sync resync: ${started.reason} (crm-sync resync --help lists the resources)`)
    return EXIT.usage
  }
  const runId = started.runId
  // Every resource is covered by a run already queued or running: that run does what was asked.
  const existing = started.status === 'conflict'
  // Some are: they are left out of this run, to the runs that cover them.
  const covered = existing ? [] : started.covered
  const coveredJson = covered.length
    ? { covered: covered.map((entry) => ({ resource: entry.resource, run_id: entry.runId })) }
    : {}
  for (const line of startNotes(started, mode)) console.error(`crm-sync resync: ${line}`)
  if (!values.wait) {
    const output = { run_id: runId, ...(existing ? { existing: true } : {}), ...coveredJson }
    if (json) console.log(JSON.stringify(output))
    else console.log(existing ? `run ${runId} (already under way)` : `run ${runId} (${mode}) started`)
    if (!(await otherProcessesLive(boss))) {
      console.error(
        'note: no crm-sync is running on this database; the run starts with the next `crm-sync start` (or use --wait to sweep here)',
      )
    }
    return EXIT.ok
  }

  const progress = json
    ? notesOnly(process.stderr)
    : createRunProgress(process.stderr, { logs: session.logs })
  // What a sweep run here meets (retries, a rate limit, its failure) is drawn by the progress and the
  // summary: only errors are logged beside it, unless --verbose.
  const sweepLogger = quieter(session.logger, session.verbose, 'error')
  const followed = await followRun({ ...session, sweepLogger }, runId, progress)
  if (followed.interrupted) {
    // Whoever pressed Ctrl-C wants the prompt back: the sweeps here are handed back within a second.
    for (const line of await handBack(session, runId, followed.local, 1000)) console.error(line)
    return EXIT.interrupted
  }
  console.log(json ? JSON.stringify({ ...followed.run, ...coveredJson }) : `\n${runSummary(followed.run)}`)
  return followed.run.status === 'succeeded' ? EXIT.ok : EXIT.failed
}

/** What the run asked for is left to: runs that already cover its resources, sweeps that hold them. */
function startNotes(started: StartRunResult, mode: RunMode): string[] {
  const what = mode === 'full' ? 'a full run' : 'a run'
  if (started.status === 'conflict') {
    return [`${what} of these resources is already queued or running: run ${started.runId}`]
  }
  const { runId, covered, waiting } = started
  const them = (names: readonly unknown[]) => (names.length === 1 ? 'it' : 'them')
  return [
    ...(covered.length
      ? [
          `left out, as ${what} already queued or running sweeps ${them(covered)}: ` +
            covered.map((entry) => `${entry.resource} (run ${entry.runId})`).join(', '),
        ]
      : []),
    ...(waiting.length
      ? [
          `${waiting.join(', ')} ${waiting.length === 1 ? 'is' : 'are'} being swept; run ${runId} waits for ${them(waiting)}`,
        ]
      : []),
  ]
}
