// Two replicas started at the same moment on one empty database, behind one public URL (a
// round-robin TCP balancer, as a load balancer in front of a scaled deployment): both migrate, both
// register hooks, both take deliveries and work. Neither may exit with an error nor answer 500; the
// hooks are registered once; the mirror converges.
import { freePort } from '../../src/database/free-port.ts'
import { readyStatus } from '../../test/support/process.ts'
import { sampleOf } from '../../test/support/prometheus.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, sandboxShortfall, settledAudit, startDeliveryLoad } from '../support/deliveries.ts'
import { type Engine, engineEnv, errorLines, startEngine, tail } from '../support/engine.ts'
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

export const twoReplicas: Scenario = {
  name: 'two-replicas',
  title: 'Two replicas starting together on one database',
  description:
    'Two engines are started at the same moment on one empty database (both run the migrations, both ' +
    'start pg-boss and register hooks), behind one `PUBLIC_URL`: a round-robin TCP balancer. The ' +
    "sandbox's users make 4 changes a second for 30 s (its webhooks go through the balancer) and 4 " +
    'senders post deliveries to each replica in turn. Asserts: both become ready and neither exits; no ' +
    '500; both acknowledge deliveries and complete jobs (`crm_sync_jobs_total`); every acknowledged delivery is stored and applied; the CRM holds ' +
    'exactly 12 hooks (not registered twice); the mirror converges. Recover: from the start to both ' +
    'replicas ready. Converge: from the end of the load.',
  limitSeconds: { full: 240, quick: 150 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const sandbox = await startWorld(scope, { seedSize: quick ? 30 : 80 })
    const database = await createScratchDatabase(server, 'two-replicas', scope)
    const ports = [await freePort(), await freePort()]
    const balancer = await startProxy(ports.map((port) => ({ host: '127.0.0.1', port })))
    scope.defer(() => balancer.close())
    const publicUrl = `http://127.0.0.1:${balancer.port}`
    const startedAt = Date.now()
    const replicas: Engine[] = await Promise.all(
      ports.map((port, index) =>
        startEngine(
          `replica ${index + 1}`,
          engineEnv(sandbox, { databaseUrl: database.url, port, publicUrl }),
          scope,
        ),
      ),
    )
    await Promise.all(replicas.map((replica) => replica.ready()))
    const ready = secondsSince(startedAt)
    log(`both replicas ready after ${ready} s; waiting for the first sync`)
    await waitConverged(database.db, sandbox, 120_000)

    const load = startDeliveryLoad({ targets: replicas.map((r) => r.url), ids: livePeople(sandbox) })
    const changes = startChanges(sandbox, 4)
    scope.defer(() => changes.stop())
    scope.defer(() => load.stop())
    await sleep(quick ? 15_000 : 30_000)
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
    const fromSandbox = await sandboxShortfall(database.db, sandbox)
    const hooks = sandbox.control.crm.hooks()
    check(hooks.length === 12, `the CRM holds ${hooks.length} hooks, not 12`)
    const perTarget = load.perTarget()
    for (const replica of replicas) {
      const code = replica.exitCode()
      check(code === undefined, `${replica.name} exited with ${code}:\n${tail(replica.output())}`)
      check(
        (await readyStatus(replica.port).catch(() => undefined)) === 200,
        `${replica.name}: /readyz not 200 at the end`,
      )
      check((perTarget.get(replica.url) ?? 0) > 0, `${replica.name} acknowledged no delivery`)
      const metrics = await fetch(`${replica.url}/metrics`).then(
        (r) => r.text(),
        () => '',
      )
      const jobs = sampleOf(metrics, 'crm_sync_jobs_total', { outcome: 'completed' }) ?? 0
      check(jobs > 0, `${replica.name} completed no job (sweep, refresh)`)
      note(
        `${replica.name}: ${perTarget.get(replica.url) ?? 0} deliveries acknowledged, ${jobs} jobs completed, ${errorLines(replica.output()).length} error log lines`,
      )
    }
    note(`both ready ${ready} s after the simultaneous start`)
    note(`deliveries: ${describeTally(load.tally())}`)
    note(
      `sandbox: ${changes.made()} changes; its deliveries: ${fromSandbox.acknowledged} acknowledged, ${fromSandbox.stored} in the inbox; ${hooks.length} hooks`,
    )
    note(describeAudit(audit, fromSandbox.shortfall))
    return {
      tally: load.tally(),
      lost: audit.lost.length + audit.unapplied.length + fromSandbox.shortfall,
      recoverSeconds: ready,
      convergeSeconds: converge,
    }
  },
}
