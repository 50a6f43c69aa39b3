// 5. Freshness: seconds from a delivery's arrival to its row in the mirror, p50 and p99, at 20 changes
// per second with 50 ms of upstream latency and lean hooks (every change costs a show). Each change is
// of another person, so that each row's last write is its change's refresh. The request budget is lifted:
// under the real 50 requests / 10 s a lean engine can fetch 5 records per second, fewer than 20.
import { sql } from 'kysely'
import { startSandbox } from '../src/sandbox/index.ts'
import { createBenchDatabase } from './support/database.ts'
import { spawnEngine } from './support/engines.ts'
import { runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Scenario } from './support/scenario.ts'
import { percentile, round, sleep, waitFor } from './support/stats.ts'

const RATE = 20
const LATENCY_MS = 50

async function run(ctx: Context) {
  const seconds = ctx.quick ? 10 : 30
  const changes = RATE * seconds
  const sandbox = await startSandbox({
    seedSize: { people: changes + 50 },
    behaviour: { crmRateLimit: null },
    faults: { crm: { latencyMs: LATENCY_MS } },
  })
  const database = await createBenchDatabase(ctx.server, 'freshness')
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    hooks: true,
    env: { HOOK_OBJECT_TYPE: 'lean', INCREMENTAL_SYNC_INTERVAL: '86400', CRM_RATE_LIMIT: '10000' },
  })
  try {
    await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 30_000)
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      120_000,
    )

    ctx.log(`${changes} changes at ${RATE}/s, ${LATENCY_MS} ms upstream latency`)
    const ids = sandbox.control.crm.liveIds('people').slice(0, changes)
    const changedAt = new Map<number, number>()
    const started = performance.now()
    for (let i = 0; i < ids.length; i++) {
      const wait = started + (i * 1000) / RATE - performance.now()
      if (wait > 0) await sleep(wait)
      const id = ids[i] as number
      changedAt.set(id, Date.now())
      sandbox.control.crm.update('people', id, { first_name: `fresh ${i}` })
    }
    const pace = ids.length / ((performance.now() - started) / 1000)
    await sandbox.control.drainDeliveries()
    await waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from crm.people where id = any(${ids}::bigint[]) and first_name like 'fresh %'
        `.execute(database.db)
        return rows[0]?.n === ids.length ? true : undefined
      },
      'every change in the mirror',
      120_000,
    )
    const { rows } = await sql<{ id: number; received_at: Date; synced_at: Date }>`
      select p.id, i.received_at, p._synced_at as synced_at
      from crm.people p join sync.inbox i on i.model = 'person' and i.record_id = p.id and i.event = 'update'
      where p.id = any(${ids}::bigint[])
    `.execute(database.db)
    const freshness = rows.map((row) => (row.synced_at.getTime() - row.received_at.getTime()) / 1000)
    const webhookLeg = rows.map(
      (row) => (row.received_at.getTime() - (changedAt.get(row.id) ?? Number.NaN)) / 1000,
    )
    const p50 = percentile(freshness, 50)
    const p99 = percentile(freshness, 99)
    return {
      settings: {
        changes,
        rate: `${RATE}/s (achieved ${round(pace, 1)}/s), each of another person`,
        upstreamLatencyMs: LATENCY_MS,
        hooks: 'lean (every change is a show)',
        budget: 'lifted (CRM_RATE_LIMIT 10000, no sandbox limit)',
        engine: 'its own process',
      },
      figures: [
        {
          measure: `delivery to row, p50, ${RATE} changes/s`,
          value: p50,
          unit: 's',
          digits: 2,
          reference: {
            value: percentile(webhookLeg, 50),
            unit: 's',
            label: 'change to delivery (the webhook leg), p50',
            digits: 3,
          },
          target: atMost(p50, 1, '< 1 s'),
        },
        {
          measure: `delivery to row, p99, ${RATE} changes/s`,
          value: p99,
          unit: 's',
          digits: 2,
          reference: {
            value: percentile(webhookLeg, 99),
            unit: 's',
            label: 'change to delivery, p99',
            digits: 3,
          },
          target: atMost(p99, 3, '< 3 s'),
          bound:
            'a delivery job, then a refresh job (each woken by NOTIFY, polled every 0.5 s otherwise), one show at 50 ms, one upsert; ' +
            `max ${round(percentile(freshness, 100), 2)} s`,
        },
      ],
      details: {
        measured: rows.length,
        freshness: {
          p50: round(p50, 3),
          p90: round(percentile(freshness, 90), 3),
          p99: round(p99, 3),
          max: round(percentile(freshness, 100), 3),
        },
        webhookLeg: { p50: round(percentile(webhookLeg, 50), 3), p99: round(percentile(webhookLeg, 99), 3) },
        counters: sandbox.control.counters().crm.statuses,
      },
    }
  } finally {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
}

export const freshness: Scenario = { name: 'freshness', title: 'Freshness', run }
