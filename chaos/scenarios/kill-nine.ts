// kill -9 at random points, ten times, while sweeps page through a large resource and deliveries
// pour in; the engine is started again after each kill (same port, same database). Each kill waits
// for a sweep to be walking, so that every one lands mid-sweep by construction, not by luck. Afterwards
// every acknowledged delivery is in the inbox and applied, every interrupted sweep has been taken up
// and has succeeded, and after one full reconciliation the mirror converges to the sandbox's truth.
import { sql } from 'kysely'
import { createRandom } from '../../sandbox/random.ts'
import { freePort } from '../../src/database/free-port.ts'
import type { Db } from '../../src/store/database.ts'
import { waitFor } from '../../test/support/process.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, sandboxShortfall, settledAudit, startDeliveryLoad } from '../support/deliveries.ts'
import { engineEnv, errorLines, startEngine } from '../support/engine.ts'
import { reconcile, requestFullRun } from '../support/reconcile.ts'
import {
  type Outcome,
  type Scenario,
  type ScenarioContext,
  secondsSince,
  sleep,
} from '../support/scenario.ts'
import { describeTally } from '../support/tally.ts'
import { livePeople, startChanges, startWorld, waitConverged } from '../support/world.ts'

const LARGE = 'crm.people'

/**
 * Whether a sweep of the large resource is walking right now: running, with a page saved in the last
 * second (an interrupted sweep stays `running` until its job's heartbeat expires, so the status alone
 * does not tell). The small resources' sweeps end within a page or two, too soon to be hit.
 */
async function walking(db: Db): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.run_resources
    where resource = ${LARGE} and status = 'running' and pages > 0
      and progress_at > now() - interval '1 second'`.execute(db)
  return (rows[0]?.n ?? 0) > 0
}

/** Sweeps of runs up to `lastRun` that have not finished, and those that finished failed. */
async function sweepOutcomes(db: Db, lastRun: number): Promise<{ unfinished: number; failed: string[] }> {
  const { rows } = await sql<{ run_id: number; resource: string; status: string; error: string | null }>`
    select run_id, resource, status, error from sync.run_resources
    where run_id <= ${lastRun} and status in ('queued', 'running', 'failed')`.execute(db)
  return {
    unfinished: rows.filter((row) => row.status !== 'failed').length,
    failed: rows
      .filter((row) => row.status === 'failed')
      .map((row) => `${row.resource} in run ${row.run_id}: ${row.error}`),
  }
}

async function lastRunId(db: Db): Promise<number> {
  const { rows } = await sql<{ id: number | null }>`select max(id)::int as id from sync.runs`.execute(db)
  return rows[0]?.id ?? 0
}

export const killNine: Scenario = {
  name: 'kill-nine',
  title: 'kill -9 at random points during sweeps and ingest',
  description:
    'An engine mirrors a sandbox of 3,000 people (pages of 100, 100 ms a request, so that a full sweep ' +
    "walks for seconds) while 4 senders post deliveries and the sandbox's users make 3 changes a second. " +
    'Ten times, the admin API is asked for a full run; a random 0 to 400 ms later, once the people ' +
    'sweep has saved a page within the last second while deliveries are in flight, the engine is ' +
    'killed with SIGKILL (its whole process group) and started again on the same port and database. ' +
    'Asserts: every kill landed while a sweep walked, most with deliveries in flight; no ' +
    '500; every acknowledged delivery is in `sync.inbox` and ends applied; every sweep interrupted by a ' +
    'kill is taken up again and succeeds; after the load, a full reconciliation (the one "in sync" ' +
    "allows for changes that leave `updated_at` alone, as the sandbox's tag changes do) succeeds and " +
    'the mirror converges. Recover: the longest restart (kill to `/readyz` 200). Converge: from the end ' +
    'of the load, the reconciliation included.',
  limitSeconds: { full: 420, quick: 240 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const kills = quick ? 3 : 10
    const sandbox = await startWorld(scope, {
      seedSize: {
        people: quick ? 1000 : 3000,
        companies: 60,
        deals: 60,
        projects: 30,
        tasks: 60,
        contacts: 60,
        bookings: 60,
      },
      behaviour: { maxPerpage: 100 },
      latencyMs: 100,
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
      // A full run sweeps every page: asked for before each kill, or already under way (409).
      const { status } = await requestFullRun(url)
      check(status === 202 || status === 409, `POST /admin/resync answered ${status}`)
      // A random moment, then the kill lands while a sweep walks and deliveries are in flight, by
      // construction: nothing is awaited between the probe that saw both and the kill but one query.
      await sleep(random.int(0, 400))
      await waitFor(
        async () => ((await walking(db)) && load.inFlight() > 0 ? true : undefined),
        60_000,
        'a sweep walking and deliveries in flight',
      ).catch(() => undefined)
      const posting = load.inFlight()
      const sweeping = await walking(db)
      const killedAt = Date.now()
      await engine.kill()
      if (sweeping) midSweep++
      if (posting > 0) midIngest++
      log(
        `kill ${kill}/${kills}: ${sweeping ? 'a sweep walking' : 'no sweep walking'}, ${posting} deliveries in flight`,
      )
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
    log('load stopped; auditing the inbox and the interrupted sweeps, then reconciling')

    const audit = await settledAudit(db, load, 120_000)
    const settled = await waitFor(
      async () =>
        (await sweepOutcomes(db, lastRun)).unfinished === 0 ? secondsSince(restartedAt) : undefined,
      90_000,
      'the interrupted sweeps to finish',
    ).catch(async () => {
      check(
        false,
        `${(await sweepOutcomes(db, lastRun)).unfinished} sweeps interrupted by a kill never finished`,
      )
      return null
    })
    const { failed } = await sweepOutcomes(db, lastRun)
    check(failed.length === 0, `sweeps that failed after a kill:\n  ${failed.join('\n  ')}`)
    const reconciliation = await reconcile(url, 150_000).catch((error: Error) => {
      check(false, `the full reconciliation after the load: ${error.message}`)
      return null
    })
    if (reconciliation) {
      check(reconciliation.status === 'succeeded', `the full reconciliation ${reconciliation.status}`)
    }
    const converge = await waitConverged(db, sandbox, 60_000).then(
      () => secondsSince(stoppedAt),
      (error: Error) => {
        check(false, error.message)
        return null
      },
    )
    const fromSandbox = await sandboxShortfall(db, sandbox)
    check(midSweep === kills, `${kills - midSweep} of ${kills} kills did not land while a sweep walked`)
    check(midIngest > kills / 2, `only ${midIngest} of ${kills} kills landed with deliveries in flight`)
    note(`${kills} kills: ${midSweep} while a sweep walked, ${midIngest} with deliveries in flight`)
    note(`restarts (kill to /readyz 200): ${restarts.map((s) => s.toFixed(1)).join(', ')} s`)
    note(`every interrupted sweep finished ${settled} s after the last restart; ${failed.length} failed`)
    if (reconciliation) {
      note(
        `full reconciliation after the load: run ${reconciliation.runId} ${reconciliation.status}` +
          (reconciliation.repeats
            ? ` (asked again ${reconciliation.repeats}× while an earlier full run ran)`
            : ''),
      )
    }
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
