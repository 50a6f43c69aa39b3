// PostgreSQL stopped, then slowed, while deliveries pour in. The engine reaches its database through a
// proxy the suite cuts (refused connections, open ones destroyed: what a stopped server looks like)
// and then slows (every chunk held back, both ways). Meanwhile our senders post deliveries and the
// sandbox's users make changes. Every delivery must be answered 200 (stored) or 503 (not stored),
// never 500, and never acknowledged without its inbox row; afterwards the mirror converges.

import { freePort } from '../../src/database/free-port.ts'
import { readyStatus, waitFor } from '../../test/support/process.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, sandboxShortfall, settledAudit, startDeliveryLoad } from '../support/deliveries.ts'
import { crashReport, engineEnv, errorLines, startEngine, tail } from '../support/engine.ts'
import { startProxy } from '../support/proxy.ts'
import {
  type Outcome,
  type Scenario,
  type ScenarioContext,
  secondsSince,
  sleep,
} from '../support/scenario.ts'
import { describeTally } from '../support/tally.ts'
import { livePeople, startChanges, startWorld, waitConverged } from '../support/world.ts'

export const databaseOutage: Scenario = {
  name: 'database-outage',
  title: 'Database stopped and slowed during ingest',
  description:
    'The engine reaches PostgreSQL through a TCP proxy. While 4 senders post deliveries and the ' +
    "sandbox's users make 4 changes a second, the proxy is cut for 20 s (new connections refused, " +
    'open ones destroyed), then, after 10 s of health, slowed for 20 s (every chunk held back 2 s, ' +
    'both ways). Asserts: no 500; every delivery acknowledged is in `sync.inbox` under the id it was ' +
    'answered with and ends applied; the engine keeps running and `/readyz` comes back; the mirror ' +
    "converges to the sandbox's truth. Recover: from the end of the cut to the first acknowledged " +
    'delivery. Converge: from the end of the load.',
  limitSeconds: { full: 300, quick: 150 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const outageMs = quick ? 8_000 : 20_000
    const slowMs = quick ? 8_000 : 20_000
    const sandbox = await startWorld(scope, { seedSize: quick ? 30 : 60 })
    const database = await createScratchDatabase(server, 'database-outage', scope)
    const proxy = await startProxy([database.target])
    scope.defer(() => proxy.close())
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const engine = await startEngine(
      'engine',
      engineEnv(sandbox, { databaseUrl: database.urlVia(proxy.port), port, publicUrl: url }),
      scope,
    )
    await engine.ready()
    log('engine ready; waiting for the first sync')
    await waitConverged(database.db, sandbox, 120_000)

    const load = startDeliveryLoad({ targets: [url], ids: livePeople(sandbox) })
    const changes = startChanges(sandbox, 4)
    scope.defer(() => changes.stop())
    scope.defer(() => load.stop())
    const phase = async (name: string, ms: number) => {
      load.phase(name)
      log(`${name} for ${ms / 1000} s`)
      await sleep(ms)
    }
    // An engine that died of the fault is a failure; it is started again (as an orchestrator would)
    // so that the rest of the scenario still measures what it can.
    const crashes: string[] = []
    const survived = async (during: string) => {
      const code = engine.exitCode()
      if (code === undefined) return
      const crash = crashReport(engine.output())
      crashes.push(during)
      check(false, `the engine exited with ${code} while the ${during}:\n${crash}`)
      log(`the engine exited with ${code}; starting it again. It printed:\n${crash}`)
      await engine.restart()
      await engine.ready(60_000)
    }
    const recovered = async (since: number, what: string) => {
      const first = await load.firstAckAfter(since, 60_000).catch(() => null)
      check(first !== null, `no delivery acknowledged within 60 s after the ${what}`)
      return first === null ? null : (first - since) / 1000
    }
    await phase('healthy', 5_000)
    await proxy.cut()
    await phase('database down', outageMs)
    await proxy.restore()
    const restoredAt = Date.now()
    load.phase('after the outage')
    await survived('database was down')
    const recover = await recovered(restoredAt, 'outage')
    const ready = await waitFor(() => readyStatus(port), 60_000, '/readyz after the outage')
      .then(() => secondsSince(restoredAt))
      .catch(() => null)
    check(ready !== null, '/readyz did not answer 200 within 60 s of the database coming back')
    await sleep(Math.max(0, 10_000 - (Date.now() - restoredAt)))
    proxy.slow(2_000)
    await phase('database slow (2 s a chunk)', slowMs)
    proxy.slow(0)
    const fastAt = Date.now()
    load.phase('after the slowness')
    await survived('database was slow')
    const recoverSlow = await recovered(fastAt, 'slowness')
    await sleep(5_000)
    await load.stop()
    await changes.stop()
    const stoppedAt = Date.now()
    log('load stopped; auditing the inbox and waiting for convergence')

    const audit = await settledAudit(database.db, load, 120_000)
    const converge = await waitConverged(database.db, sandbox, 150_000).then(
      () => secondsSince(stoppedAt),
      (error: Error) => {
        check(false, error.message)
        return null
      },
    )
    check(
      engine.exitCode() === undefined,
      `the engine exited (${engine.exitCode()}):\n${tail(engine.output())}`,
    )
    for (const [name, tally] of load.phases()) note(`${name}: ${describeTally(tally)}`)
    const down = load.phases().get('database down')
    check(
      (down?.http503 ?? 0) > 0,
      `no delivery was answered 503 while the database was down (${down ? describeTally(down) : 'none sent'})`,
    )
    note(
      `recovered: first 200 ${recover?.toFixed(1)} s after the cut ended (/readyz ${ready} s), ${recoverSlow?.toFixed(1)} s after the slowness`,
    )
    if (crashes.length) note(`the engine died while the ${crashes.join(' and while the ')} (restarted)`)
    note(`proxy: ${proxy.stats().connections} connections, ${proxy.stats().destroyed} cut`)
    const fromSandbox = await sandboxShortfall(database.db, sandbox)
    note(
      `sandbox: ${changes.made()} changes; its deliveries: ${fromSandbox.acknowledged} acknowledged, ${fromSandbox.stored} in the inbox`,
    )
    note(`answered 503 but stored anyway (a duplicate when retried): ${audit.refusedButStored.length}`)
    note(`engine log: ${errorLines(engine.output()).length} error lines`)
    note(describeAudit(audit, fromSandbox.shortfall))
    return {
      tally: load.tally(),
      lost: audit.lost.length + audit.unapplied.length + fromSandbox.shortfall,
      recoverSeconds: recover === null || recoverSlow === null ? null : Math.max(recover, recoverSlow),
      convergeSeconds: converge,
    }
  },
}
