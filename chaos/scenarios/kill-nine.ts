// kill -9 at random points, ten times, while sweeps page through a large resource and deliveries
// pour in; the engine is started again after each kill (same port, same database). Afterwards every
// acknowledged delivery is in the inbox and applied, every interrupted sweep has been taken up and
// has finished, and the mirror converges to the sandbox's truth.
import { sql } from 'kysely'
import { createRandom } from '../../sandbox/random.ts'
import type { Db } from '../../src/store/database.ts'
import { freePort } from '../../src/store/free-port.ts'
import { waitFor } from '../../test/support/process.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, sandboxShortfall, settledAudit, startDeliveryLoad } from '../support/deliveries.ts'
import { CHAOS_ADMIN_TOKEN, engineEnv, errorLines, startEngine } from '../support/engine.ts'
import {
  type Outcome,
  type Scenario,
  type ScenarioContext,
  secondsSince,
  sleep,
} from '../support/scenario.ts'
import { describeTally } from '../support/tally.ts'
import { livePeople, startChanges, startWorld, waitConverged } from '../support/world.ts'

async function sweepsRunning(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.run_resources where status = 'running'`.execute(db)
  return rows[0]?.n ?? 0
}

/** Sweeps of runs up to `lastRun` that have not finished. */
async function unfinishedSweeps(db: Db, lastRun: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.run_resources
    where run_id <= ${lastRun} and status in ('queued', 'running')`.execute(db)
  return rows[0]?.n ?? 0
}

async function lastRunId(db: Db): Promise<number> {
  const { rows } = await sql<{ id: number | null }>`select max(id)::int as id from sync.runs`.execute(db)
  return rows[0]?.id ?? 0
}

/** Asks for a full run of every resource, so that a sweep of every page is under way. */
async function requestFullRun(url: string): Promise<number> {
  const response = await fetch(`${url}/admin/resync`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CHAOS_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'full' }),
  })
  await response.body?.cancel()
  return response.status
}

export const killNine: Scenario = {
  name: 'kill-nine',
  title: 'kill -9 at random points during sweeps and ingest',
  description:
    'An engine mirrors a sandbox of 1,500 people (pages of 100, 20 ms a request) while 4 senders post ' +
    "deliveries and the sandbox's users make 3 changes a second. Ten times, at a random moment 1 to 6 s " +
    'after it is ready (every other time just after asking the admin API for a full run), the engine ' +
    'is killed with SIGKILL (its whole process group) and started again on the same port and ' +
    'database. Asserts: no 500; every acknowledged delivery is in `sync.inbox` and ends applied; every ' +
    'sweep interrupted by a kill is taken up again and finishes; the mirror converges. Recover: the ' +
    'longest restart (kill to `/readyz` 200). Converge: from the end of the load.',
  limitSeconds: { full: 360, quick: 180 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const kills = quick ? 3 : 10
    const sandbox = await startWorld(scope, {
      seedSize: {
        people: quick ? 600 : 1500,
        companies: 60,
        deals: 60,
        projects: 30,
        tasks: 60,
        contacts: 60,
        bookings: 60,
      },
      behaviour: { maxPerpage: 100 },
      latencyMs: 20,
    })
    const database = await createScratchDatabase(server, 'kill-nine', scope)
    const { db } = database
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const engine = await startEngine(
      'engine',
      engineEnv(sandbox, { databaseUrl: database.url, port, publicUrl: url }),
      scope,
    )
    await engine.ready()
    const load = startDeliveryLoad({ targets: [url], ids: livePeople(sandbox) })
    const changes = startChanges(sandbox, 3)
    scope.defer(() => changes.stop())
    scope.defer(() => load.stop())

    const random = createRandom(9)
    const restarts: number[] = []
    let midSweep = 0
    let midIngest = 0
    for (let kill = 1; kill <= kills; kill++) {
      if (kill % 2 === 0) {
        const status = await requestFullRun(url)
        check(status === 202 || status === 409, `POST /admin/resync answered ${status}`)
      }
      await sleep(random.int(1_000, 6_000))
      const sweeping = await sweepsRunning(db)
      const posting = load.inFlight()
      const killedAt = Date.now()
      await engine.kill()
      if (sweeping > 0) midSweep++
      if (posting > 0) midIngest++
      log(`kill ${kill}/${kills}: ${sweeping} sweeps running, ${posting} deliveries in flight`)
      await engine.restart()
      await engine.ready(60_000)
      restarts.push(secondsSince(killedAt))
    }
    const lastRun = await lastRunId(db)
    const restartedAt = Date.now()
    await sleep(10_000)
    await load.stop()
    await changes.stop()
    const stoppedAt = Date.now()
    log('load stopped; auditing the inbox, the interrupted sweeps and the mirror')

    const audit = await settledAudit(db, load, 120_000)
    const settled = await waitFor(
      async () => ((await unfinishedSweeps(db, lastRun)) === 0 ? secondsSince(restartedAt) : undefined),
      90_000,
      'the interrupted sweeps to finish',
    ).catch(async () => {
      check(false, `${await unfinishedSweeps(db, lastRun)} sweeps interrupted by a kill never finished`)
      return null
    })
    const converge = await waitConverged(db, sandbox, 150_000).then(
      () => secondsSince(stoppedAt),
      (error: Error) => {
        check(false, error.message)
        return null
      },
    )
    const fromSandbox = await sandboxShortfall(db, sandbox)
    check(midSweep > 0, 'no kill landed while a sweep was running')
    note(`${kills} kills: ${midSweep} while a sweep ran, ${midIngest} with deliveries in flight`)
    note(`restarts (kill to /readyz 200): ${restarts.map((s) => s.toFixed(1)).join(', ')} s`)
    note(`every interrupted sweep finished ${settled} s after the last restart`)
    note(`deliveries: ${describeTally(load.tally())}`)
    note(
      `sandbox: ${changes.made()} changes; its deliveries: ${fromSandbox.acknowledged} acknowledged, ${fromSandbox.stored} in the inbox`,
    )
    note(`engine logs: ${errorLines(engine.output()).length} error lines over ${kills + 1} processes`)
    note(describeAudit(audit, fromSandbox.shortfall))
    return {
      tally: load.tally(),
      lost: audit.lost.length + audit.unapplied.length + fromSandbox.shortfall,
      recoverSeconds: Math.max(...restarts),
      convergeSeconds: converge,
    }
  },
}
