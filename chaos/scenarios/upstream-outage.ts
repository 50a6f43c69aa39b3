// The upstream unreachable for a minute, then back: the engine reaches both services of the sandbox
// through proxies that refuse every connection meanwhile. Deliveries keep coming (the CRM's own
// webhooks and ours: the database is fine, so they are stored), the sweeps and refreshes fail. Once
// the upstream is back, the engine recovers by itself and the mirror converges.
import { sql } from 'kysely'
import { freePort } from '../../src/database/free-port.ts'
import type { Db } from '../../src/store/database.ts'
import { waitFor } from '../../test/support/process.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, sandboxShortfall, settledAudit, startDeliveryLoad } from '../support/deliveries.ts'
import { engineEnv, errorLines, startEngine, tail } from '../support/engine.ts'
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

/** Sweeps that ended between `from` and `to` (epoch ms), by status. */
async function sweepsEnded(db: Db, from: number, to: number) {
  const { rows } = await sql<{ status: string; n: number }>`
    select status, count(*)::int as n from sync.run_resources
    where finished_at between ${new Date(from)} and ${new Date(to)}
    group by status`.execute(db)
  return rows
}

/**
 * Sweeps recorded succeeded that started after `from` + 1 s and ended before `to`: they could not
 * reach the upstream. `idle`: those that had nothing to ask (0 requests: users, whose complete walk is
 * due every other interval only), which is no claim about the upstream.
 */
async function succeededInside(db: Db, from: number, to: number) {
  const { rows } = await sql<{ run_id: number; resource: string; api_requests: number; pages: number }>`
    select run_id, resource, api_requests, pages from sync.run_resources
    where status = 'succeeded' and started_at > ${new Date(from + 1_000)} and finished_at < ${new Date(to)}`.execute(
    db,
  )
  const idle = (row: { api_requests: number; pages: number }) => row.api_requests === 0 && row.pages === 0
  return {
    idle: rows.filter(idle).length,
    claimed: rows
      .filter((row) => !idle(row))
      .map((row) => `run ${row.run_id} ${row.resource} (${row.api_requests} requests, ${row.pages} pages)`),
  }
}

export const upstreamOutage: Scenario = {
  name: 'upstream-outage',
  title: 'Upstream down for a minute, then back',
  description:
    'The engine reaches the CRM and the reservation service through TCP proxies. While 4 senders post ' +
    "deliveries and the sandbox's users make 3 changes a second (their webhooks reach the engine " +
    'directly), both proxies refuse every connection for 60 s, then let them through again; the load ' +
    'stops at that moment. Asserts: no 500; every acknowledged delivery is stored and applied; no sweep ' +
    'that ran wholly inside the outage and asked the upstream anything is recorded `succeeded`; the ' +
    'engine keeps running; the mirror converges. Recover: from the end of the outage to the first sweep ' +
    'that reads the upstream and succeeds. Converge: from the end of the outage.',
  limitSeconds: { full: 300, quick: 150 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const outageMs = quick ? 20_000 : 60_000
    const sandbox = await startWorld(scope, { seedSize: quick ? 30 : 60 })
    const database = await createScratchDatabase(server, 'upstream-outage', scope)
    const { db } = database
    const target = (url: string) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })
    const crm = await startProxy([target(sandbox.crmUrl)])
    const reservation = await startProxy([target(sandbox.reservationUrl)])
    scope.defer(() => crm.close())
    scope.defer(() => reservation.close())
    const upstream = {
      ...sandbox,
      crmUrl: `http://127.0.0.1:${crm.port}`,
      reservationUrl: `http://127.0.0.1:${reservation.port}`,
    }
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const engine = await startEngine(
      'engine',
      engineEnv(upstream, { databaseUrl: database.url, port, publicUrl: url }),
      scope,
    )
    await engine.ready()
    log('engine ready; waiting for the first sync')
    await waitConverged(db, sandbox, 120_000)

    const load = startDeliveryLoad({ targets: [url], ids: livePeople(sandbox) })
    const changes = startChanges(sandbox, 3)
    scope.defer(() => changes.stop())
    scope.defer(() => load.stop())
    load.phase('healthy')
    await sleep(5_000)
    await Promise.all([crm.cut(), reservation.cut()])
    const cutAt = Date.now()
    load.phase('upstream down')
    log(`upstream down for ${outageMs / 1000} s`)
    await sleep(outageMs)
    await load.stop()
    await changes.stop()
    await Promise.all([crm.restore(), reservation.restore()])
    const restoredAt = Date.now()
    log('upstream back; waiting for the engine to recover and converge')

    const recover = await waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from sync.run_resources
          where status = 'succeeded' and api_requests > 0 and started_at >= ${new Date(restoredAt)}`.execute(
          db,
        )
        return (rows[0]?.n ?? 0) > 0 ? secondsSince(restoredAt) : undefined
      },
      120_000,
      'a sweep that succeeds',
    ).catch(() => {
      check(false, 'no sweep succeeded within 120 s of the upstream coming back')
      return null
    })
    const converge = await waitConverged(db, sandbox, 180_000).then(
      () => secondsSince(restoredAt),
      (error: Error) => {
        check(false, error.message)
        return null
      },
    )
    const audit = await settledAudit(db, load, 60_000)
    const fromSandbox = await sandboxShortfall(db, sandbox)
    const during = await sweepsEnded(db, cutAt, restoredAt)
    const wrong = await succeededInside(db, cutAt, restoredAt)
    check(
      wrong.claimed.length === 0,
      `sweeps that ran wholly inside the outage are recorded succeeded: ${wrong.claimed.join('; ')}`,
    )
    check(
      engine.exitCode() === undefined,
      `the engine exited (${engine.exitCode()}):\n${tail(engine.output())}`,
    )
    for (const [name, tally] of load.phases()) note(`${name}: ${describeTally(tally)}`)
    const ended = during.map((row) => `${row.n} ${row.status}`).join(', ') || 'none'
    note(`sweeps ended during the outage: ${ended} (of them succeeded with nothing to ask: ${wrong.idle})`)
    note(`recovered: first sweep succeeded ${recover} s, mirror converged ${converge} s after the outage`)
    note(
      `sandbox: ${changes.made()} changes; its deliveries: ${fromSandbox.acknowledged} acknowledged, ${fromSandbox.stored} in the inbox`,
    )
    note(`proxies: ${crm.stats().connections + reservation.stats().connections} connections`)
    note(`engine log: ${errorLines(engine.output()).length} error lines`)
    note(describeAudit(audit, fromSandbox.shortfall))
    return {
      tally: load.tally(),
      lost: audit.lost.length + audit.unapplied.length + fromSandbox.shortfall,
      recoverSeconds: recover,
      convergeSeconds: converge,
    }
  },
}
