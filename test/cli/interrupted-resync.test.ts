// `crm-sync resync --wait` stopped before its run ends: what it says is what happens. With no crm-sync
// running, the sweep it was running here waits (its job handed back for a retry), shows so at once in
// `crm-sync status`, and the next start resumes it from its checkpoint; the sweeps that had finished are
// named with their outcome, those never started as started by the next start; with one running, the
// run goes on there; a sweep out of retries is ended as failed at once; and a sweep whose CLI was
// killed is taken over by the running crm-sync.
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { type RunView, readRun, readRuns } from '../../src/store/runs.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type Engine, startEngine } from '../support/engine.ts'
import { runCli as runInGroup, waitFor } from '../support/process.ts'
import { removeWorkdirs, cli as runCli, startCli, workdir } from './run.ts'

const SEED = 30
// Small pages, each answered slowly: a sweep of crm.people takes 6 pages, long enough to interrupt.
const PAGE = { CRM_RATE_LIMIT: '1000', RESERVATION_RATE_LIMIT: '1000' }

let sandbox: Sandbox
let database: TestDatabase
let engine: Engine | undefined
let cwd: string
let env: Record<string, string>

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: SEED,
    // Ties in one order, so that no group of them is read again: the counts below are exact.
    behaviour: { crmRateLimit: null, reservationRateLimit: null, tieOrder: 'by-id', maxPerpage: 5 },
  })
  cwd = await workdir()
})
afterAll(async () => {
  await sandbox?.stop()
  await removeWorkdirs()
})
beforeEach(async () => {
  database = await createTestDatabase()
  env = { CRM_BASE_URL: sandbox.crmUrl, CRM_API_KEY: sandbox.crmApiKey, DATABASE_URL: database.url, ...PAGE }
})
afterEach(async () => {
  sandbox.control.resetFaults()
  await engine?.stop()
  engine = undefined
  await dropTestDatabase(database)
})

interface SweepRow {
  run_id: number
  status: string
  records: number
  checkpoint: { nextPage?: number } | null
}

async function sweepOf(runId: number): Promise<SweepRow> {
  const { rows } = await sql<SweepRow>`
    select run_id, status, records, checkpoint from sync.run_resources
    where run_id = ${runId} and resource = 'crm.people'`.execute(database.db)
  return rows[0] as SweepRow
}

/** The state of the sweep job of `runId` in pg-boss. */
async function jobOf(runId: number) {
  const { rows } = await sql<{ state: string }>`
    select state from pgboss.job
    where name = 'resource-sweep' and (data->>'runId')::int = ${runId}`.execute(database.db)
  return rows[0]
}

/** Starts `resync --wait --full` of crm.people and waits until its sweep has saved two pages. */
async function resyncUnderWay() {
  // Slow enough that the walk, which sends pages ahead under latency, is still under way at the signal.
  sandbox.control.setFaults({ crm: { latencyMs: 2000 } })
  const cli = startCli(['resync', '--wait', '--full', '--resource', 'crm.people'], env, cwd)
  const runId = await waitFor(
    async () => {
      const run = (await readRuns(database.db)).find((candidate) => candidate.requested_by === 'cli')
      if (!run) return undefined
      return (await sweepOf(run.id)).records >= 10 ? run.id : undefined
    },
    30_000,
    `two pages swept\n${cli.stderr()}`,
  )
  return { cli, runId }
}

const succeeded = (runId: number, timeoutMs: number) =>
  waitFor(
    async () => {
      const run = await readRun(database.db, runId)
      expect(run?.status).toBe('succeeded')
      return run
    },
    timeoutMs,
    `run ${runId} to succeed`,
  )

describe('Ctrl-C on crm-sync resync --wait', () => {
  it('with no crm-sync running: the sweep waits, and the next start resumes it from its checkpoint', async () => {
    const { cli, runId } = await resyncUnderWay()
    expect(cli.stderr()).toContain('no crm-sync is running on this database: sweeping in this process')
    cli.child.kill('SIGINT')
    const { code, stderr } = await cli.result()
    expect(code).toBe(130)
    expect(stderr).toContain(
      `crm-sync resync: stopped following run ${runId}\nno crm-sync is running on this database, so ` +
        'nothing sweeps it now: crm.people waits for the next `crm-sync start` (or `crm-sync resync ' +
        `--wait\`), which resumes it from its checkpoint; \`crm-sync cancel ${runId}\` ends the run instead`,
    )
    expect(stderr).not.toContain('goes on')
    // Handed back: its job waits for a retry that nobody takes yet; the sweep keeps its checkpoint, and
    // shows at once as waiting for a worker, not as running.
    expect(await jobOf(runId)).toMatchObject({ state: 'retry' })
    const left = await sweepOf(runId)
    expect(left.status).toBe('queued')
    expect(left.checkpoint?.nextPage).toBeGreaterThan(1)
    expect(await readRun(database.db, runId)).toMatchObject({ status: 'queued' })
    const status = await runCli(['status', '--no-hooks'], env, cwd)
    expect(status.code, status.stderr).toBe(0)
    expect(status.stdout).toMatch(
      new RegExp(
        `^ {2}crm\\.people: run ${runId} queued \\(handed back: waits for a worker to resume it\\), ` +
          `\\d+(?: of ${SEED})? records, \\d+ pages$`,
        'm',
      ),
    )
    expect(status.stdout).not.toMatch(/\brunning\b/)

    sandbox.control.resetFaults()
    engine = await startEngine(sandbox, database.url, PAGE)
    const run = await succeeded(runId, 60_000)
    // From the checkpoint: every record read once (a walk from the first page would count them again).
    expect(run.resources[0]?.records).toBe(SEED)
  }, 120_000)

  it('cuts off the upstream request in flight: it ends long before that request would be answered', async () => {
    // A request may wait for its answer up to 2 minutes here.
    env = { ...env, UPSTREAM_TIMEOUT_SECONDS: '120' }
    const { cli, runId } = await resyncUnderWay()
    // From now on the CRM answers after a minute; wait until a request has gone out into that.
    sandbox.control.setFaults({ crm: { latencyMs: 60_000 } })
    const before = sandbox.control.counters().crm.requests
    await waitFor(
      async () => (sandbox.control.counters().crm.requests > before ? true : undefined),
      30_000,
      'a request sent into the slow CRM',
    )
    const interrupted = Date.now()
    cli.child.kill('SIGINT')
    const { code, stderr } = await cli.result()
    expect(code, stderr).toBe(130)
    // It waits for its sweep to reach a checkpoint (3 s at most), not for the upstream's minute.
    expect(Date.now() - interrupted).toBeLessThan(20_000)
    expect(stderr).toContain(`crm-sync resync: stopped following run ${runId}`)
    expect((await sweepOf(runId)).status).toBe('queued')
  }, 120_000)

  it('with a crm-sync running: the run goes on there', async () => {
    engine = await startEngine(sandbox, database.url, PAGE)
    await waitFor(
      async () => {
        const runs = await readRuns(database.db)
        return runs.length > 0 && runs.every((run) => run.finished_at) ? true : undefined
      },
      30_000,
      'the first run of the engine',
    )
    const { cli, runId } = await resyncUnderWay()
    cli.child.kill('SIGINT')
    const { code, stderr } = await cli.result()
    expect(code).toBe(130)
    expect(stderr).not.toContain('sweeping in this process')
    expect(stderr).toContain(
      `crm-sync resync: stopped following run ${runId}\n` +
        'it goes on in the crm-sync running on this database (crm-sync runs shows it)',
    )
    sandbox.control.resetFaults()
    expect((await succeeded(runId, 30_000)).resources[0]?.records).toBe(SEED)
  }, 120_000)

  it('names the sweeps that finished, and says which were handed back and which not started', async () => {
    // Every reservation call answers after 30 s: its sweeps are running at Ctrl-C, the CRM's are done.
    sandbox.control.setFaults({ reservation: { latencyMs: 30_000 } })
    const reservation = {
      RESERVATION_BASE_URL: sandbox.reservationUrl,
      RESERVATION_API_KEY: sandbox.reservationApiKey,
    }
    // In a process group of its own, signalled as a whole, as Ctrl-C in a terminal does.
    const cli = runInGroup(['resync', '--wait', '--full'], {
      env: { ...env, ...reservation },
      cwd,
      group: true,
    })
    const crm = (run: RunView) => run.resources.filter((sweep) => sweep.resource.startsWith('crm.'))
    const before = await waitFor(
      async () => {
        const run = (await readRuns(database.db))[0]
        if (!run) return undefined
        expect(crm(run).map((sweep) => sweep.status)).toEqual(crm(run).map(() => 'succeeded'))
        return run.resources.some((sweep) => sweep.status === 'running') ? run : undefined
      },
      60_000,
      'every CRM sweep to succeed while a reservation sweep runs',
    )
    process.kill(-(cli.child.pid as number), 'SIGINT')
    expect(await cli.exited).toBe(130)
    const after = (await readRun(database.db, before.id)) as RunView
    const named = (status: string, started: boolean) =>
      after.resources
        .filter((sweep) => sweep.status === status && (sweep.started_at !== null) === started)
        .map((sweep) => sweep.resource)
    const handedBack = named('queued', true)
    const notStarted = named('queued', false)
    // The sweeps running at Ctrl-C were handed back (queued, with their start); the others never began.
    for (const sweep of before.resources.filter((sweep) => sweep.status === 'running')) {
      expect(handedBack).toContain(sweep.resource)
    }
    expect(notStarted.length).toBeGreaterThan(0)
    expect(named('succeeded', true)).toEqual(crm(before).map((sweep) => sweep.resource))
    expect(cli.output()).toContain(
      `crm-sync resync: stopped following run ${before.id}\n` +
        `finished: ${named('succeeded', true).join(', ')} succeeded\n` +
        `no crm-sync is running on this database, so nothing sweeps it now: ${handedBack.join(', ')} ` +
        `wait${handedBack.length === 1 ? 's' : ''} for the next \`crm-sync start\` (or \`crm-sync resync --wait\`), ` +
        `which resumes ${handedBack.length === 1 ? 'it from its checkpoint' : 'them from their checkpoints'} ` +
        `and starts ${notStarted.join(', ')}; \`crm-sync cancel ${before.id}\` ends the run instead\n`,
    )
  }, 120_000)

  it('on SIGHUP too (the terminal closed); a sweep out of retries is ended as failed at once', async () => {
    const { cli, runId } = await resyncUnderWay()
    // as if interrupted five times before: the job's next failure is its last
    await sql`update pgboss.job set retry_count = retry_limit
      where name = 'resource-sweep' and (data->>'runId')::int = ${runId}`.execute(database.db)
    cli.child.kill('SIGHUP')
    const { code, stderr } = await cli.result()
    expect(code).toBe(130)
    expect(stderr).toContain(
      'crm.people had been interrupted too often (its job used up its retries): ended as failed',
    )
    expect(stderr).toContain(`run ${runId} has failed`)
    expect(await sweepOf(runId)).toMatchObject({ status: 'failed' })
    expect(await readRun(database.db, runId)).toMatchObject({
      status: 'failed',
      error: 'crm.people: interrupted, and its job had used up its retries',
    })
  }, 60_000)
})

describe('a crm-sync resync --wait killed while sweeping', () => {
  it('has its sweep resumed by the running crm-sync within a bounded time', async () => {
    const { cli, runId } = await resyncUnderWay()
    engine = await startEngine(sandbox, database.url, PAGE)
    cli.child.kill('SIGKILL')
    await cli.result()
    sandbox.control.resetFaults()
    // Its heartbeat goes stale within 10 s, the engine's monitor looks every 4 s, the retry waits 1 s.
    const run = await succeeded(runId, 40_000)
    // Killed, not stopped: pages committed after its last checkpoint are read again, and counted again.
    expect(run.resources[0]?.records).toBeGreaterThanOrEqual(SEED)
    const { rows } = await sql<{ live: number }>`
      select count(*)::int as live from crm.people where _deleted_at is null
    `.execute(database.db)
    expect(rows).toEqual([{ live: SEED }])
  }, 120_000)
})
