// 1. Durable ingest: deliveries acknowledged per second (inbox row committed: the row is the
// delivery's job) with 32 concurrent connections, and acknowledgement latency at a fixed 1,000/s,
// against pgbench's single-row inserts of a similar row into the same database in the same run. The
// receiver alone in a process of its own, then the whole engine as `crm-sync start` runs it (its
// workers applying the deliveries it takes, its sweeps and polls against a sandbox): the latency users
// meet, measured from each request's due time (open loop).
import { sql } from 'kysely'
import { NODE_FLAGS } from '../bin/node-flags.js'
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { webhookPath } from '../src/receiver/app.ts'
import type { Db } from '../src/store/database.ts'
import { spawnChild } from './support/child.ts'
import { createBenchDatabase } from './support/database.ts'
import { BENCH_SECRET, spawnEngine } from './support/engines.ts'
import { closedLoop, type Delivery, type LoadResult, openLoop } from './support/load.ts'
import { runsSettled } from './support/mirror.ts'
import { inboxInsert, pgbench } from './support/pgbench.ts'
import { atLeast, atMost, type Context, type Scenario } from './support/scenario.ts'
import { backendCpuMeter, cpuMeter, percentile, round, waitFor } from './support/stats.ts'

const CONNECTIONS = 32
const FIXED_RATE = 1000

/**
 * `nested` updates of people as the sandbox renders them (with every include): realistic bodies. Each
 * delivery carries a later `updated_at` than the one before, so that a worker applies it as it is.
 */
export async function personUpdates(count: number): Promise<() => Delivery> {
  const sandbox = await startSandbox({ seedSize: { people: count }, behaviour: { crmRateLimit: null } })
  try {
    return deliveriesOf(sandbox)
  } finally {
    await sandbox.stop()
  }
}

/** `nested` updates of the sandbox's people, each later than the one before. */
function deliveriesOf(sandbox: Sandbox): () => Delivery {
  const path = webhookPath(BENCH_SECRET, 'person', 'update')
  const marker = '"updated_at":"@@"'
  const templates = sandbox.control.crm.liveIds('people').map((id) => {
    const record = { ...sandbox.control.crm.get('people', id), updated_at: '@@' }
    const [head, tail] = JSON.stringify({ model: 'person', event: 'update', record }).split(marker)
    return { head: head as string, tail: tail as string }
  })
  const base = Math.floor(Date.now() / 1000) * 1000 - 86_400_000 // whole seconds, as upstream
  let next = 0
  return () => {
    const template = templates[next % templates.length] as { head: string; tail: string }
    const updatedAt = new Date(base + next++ * 1000).toISOString().replace('.000Z', '+00:00')
    return { path, body: `${template.head}"updated_at":"${updatedAt}"${template.tail}` }
  }
}

const summary = (load: LoadResult) => ({
  seconds: round(load.seconds, 1),
  sent: load.sent,
  acknowledged: load.acknowledged,
  statuses: load.statuses,
  errors: load.errors,
  rate: round(load.rate),
  p50Ms: round(percentile(load.latencies, 50), 1),
  p99Ms: round(percentile(load.latencies, 99), 1),
  maxMs: round(percentile(load.latencies, 100), 1),
  generatorDelayP99Ms: round(load.generatorDelay.p99Ms, 1),
  generatorDelayMaxMs: round(load.generatorDelay.maxMs, 1),
})

/** The load generator's own lateness during a run (load.ts), for the bound of a latency figure. */
const generatorLate = (load: LoadResult) =>
  `the load generator's own event loop ran late by ${round(load.generatorDelay.p99Ms, 1)} ms at p99, ${round(load.generatorDelay.maxMs, 1)} ms at most (counted in every latency)`

const pct = (fraction: number) => `${Math.round(fraction * 100)}%`

async function run(ctx: Context) {
  const seconds = ctx.quick ? 3 : 10
  // Latency at a fixed rate: a p99 over 6 s (60 samples past it) was set by one stall of the machine
  // (bench/results/2026-11-28-ingest-spread.md); 30 s puts 300 past it.
  const shortSeconds = ctx.quick ? 3 : 30
  const next = await personUpdates(ctx.quick ? 50 : 200)
  const body = next().body
  const database = await createBenchDatabase(ctx.server, 'ingest')
  try {
    ctx.log(`reference: pgbench single-row inserts, ${CONNECTIONS} clients, ${seconds} s`)
    await sql`create schema bench_reference`.execute(database.db)
    await sql`create table bench_reference.inbox (like sync.inbox including all)`.execute(database.db)
    const reference = await pgbench(database.url, [inboxInsert('bench_reference.inbox', body)], {
      clients: CONNECTIONS,
      seconds,
    })
    // PostgreSQL's own commit latency at the fixed rate, open loop: what any engine that commits a
    // delivery before it answers meets (its tail is the disk's: fsync stalls).
    ctx.log(
      `reference: pgbench single-row inserts at ${FIXED_RATE}/s, ${CONNECTIONS} clients, ${shortSeconds} s`,
    )
    const fixedReference = await pgbench(database.url, [inboxInsert('bench_reference.inbox', body)], {
      clients: CONNECTIONS,
      seconds: shortSeconds,
      rate: FIXED_RATE,
    })
    const referenceP99 = percentile(fixedReference.latencies ?? [], 99)

    const receiver = await spawnChild<{ port: number }>(
      new URL('./support/receiver-process.ts', import.meta.url),
      { databaseUrl: database.url, secret: BENCH_SECRET },
      // The V8 flags `crm-sync start` runs with (bin/node-flags.js): measured as users run it.
      [...NODE_FLAGS, ...ctx.nodeOptions],
    )
    let phases: { warmUp: LoadResult; max: LoadResult; fixed: LoadResult; half: LoadResult }
    let machineBusy: number
    let receiverCores: number
    let receiverPeakRssMb: number
    try {
      const targets = [`http://127.0.0.1:${receiver.ready.port}`]
      const warmUp = await closedLoop({ targets, next, connections: CONNECTIONS, seconds: ctx.quick ? 1 : 2 })
      ctx.log(`receiver: ${CONNECTIONS} connections, ${seconds} s`)
      const cpu = cpuMeter()
      const cpuBefore = receiver.cpuSeconds()
      const max = await closedLoop({ targets, next, connections: CONNECTIONS, seconds })
      machineBusy = cpu.read()
      receiverCores = (receiver.cpuSeconds() - cpuBefore) / max.seconds
      ctx.log(`receiver: ${FIXED_RATE}/s for ${shortSeconds} s`)
      const fixed = await openLoop({
        targets,
        next,
        connections: CONNECTIONS,
        seconds: shortSeconds,
        rate: FIXED_RATE,
      })
      const halfRate = Math.max(10, Math.round(max.rate / 2 / 10) * 10)
      ctx.log(`receiver: ${halfRate}/s (half its most) for ${shortSeconds} s`)
      const half = await openLoop({
        targets,
        next,
        connections: CONNECTIONS,
        seconds: shortSeconds,
        rate: halfRate,
      })
      phases = { warmUp, max, fixed, half }
      receiverPeakRssMb = receiver.peakRss() / 2 ** 20
    } finally {
      await receiver.stop()
    }

    ctx.log(`whole engine (crm-sync start, workers on): ${FIXED_RATE}/s for ${shortSeconds} s`)
    const engine = await engineLatency(ctx, shortSeconds)

    // Durability: every acknowledged delivery has its inbox row, and how many shared an insert.
    const stored = await sql<{ inbox: number; inserts: number }>`
      select count(*)::int as inbox, count(distinct received_at)::int as inserts
      from sync.inbox where status = 'accepted'
    `.execute(database.db)
    const acknowledged = Object.values(phases).reduce((sum, phase) => sum + phase.acknowledged, 0)
    const perInsert = (stored.rows[0]?.inbox ?? 0) / Math.max(1, stored.rows[0]?.inserts ?? 1)

    const { max, fixed, half } = phases
    const p50 = percentile(fixed.latencies, 50)
    const p99 = percentile(fixed.latencies, 99)
    const fraction = max.rate / reference.tps
    const overloaded = max.rate < FIXED_RATE
    return {
      settings: {
        connections: CONNECTIONS,
        seconds,
        fixedRate: FIXED_RATE,
        body: `nested person update with every include (${body.length} bytes)`,
        receiver: 'the receiver alone in its own process (pool of 10, as start() wires it, no workers)',
      },
      figures: [
        {
          measure: `deliveries acknowledged per second, ${CONNECTIONS} connections`,
          value: max.rate,
          unit: '/s',
          reference: {
            value: reference.tps,
            unit: '/s',
            label: 'pgbench single-row inserts of an inbox row',
          },
          target: atLeast(fraction, 0.4, `≥ 40% of reference (is ${pct(fraction)})`),
          bound:
            `the receiver commits deliveries that arrive together in one insert (${round(perInsert, 1)} deliveries per insert on average over the run); ` +
            `it used ${round(receiverCores, 2)} cores (HTTP, JSON parsing and checking of each body) on a machine ${pct(machineBusy)} busy, ` +
            `sharing 2 cores with PostgreSQL and the load generator`,
        },
        {
          measure: `acknowledgement latency p50 at ${FIXED_RATE}/s`,
          value: p50,
          unit: 'ms',
          digits: 1,
        },
        {
          measure: `acknowledgement latency p99 at ${FIXED_RATE}/s`,
          value: p99,
          unit: 'ms',
          digits: 1,
          reference: {
            value: referenceP99,
            unit: 'ms',
            label: `pgbench single-row inserts at ${FIXED_RATE}/s, open loop, p99`,
            digits: 1,
          },
          target: atMost(p99, 25, '< 25 ms'),
          bound: overloaded
            ? `${FIXED_RATE}/s is more than the receiver takes here (${round(max.rate)}/s), so deliveries queue and latency grows with the run; the same bound as the rate`
            : `acknowledged ${fixed.acknowledged} of ${fixed.sent}; ${generatorLate(fixed)}`,
        },
        {
          measure: `acknowledgement latency p99 at ${FIXED_RATE}/s, the whole engine as \`crm-sync start\` runs it`,
          value: percentile(engine.load.latencies, 99),
          unit: 'ms',
          digits: 1,
          reference: {
            value: referenceP99,
            unit: 'ms',
            label: `pgbench single-row inserts at ${FIXED_RATE}/s, open loop, p99`,
            digits: 1,
          },
          target: atMost(percentile(engine.load.latencies, 99), 25, '< 25 ms'),
          bound:
            `p50 ${round(percentile(engine.load.latencies, 50), 1)} ms, max ${round(percentile(engine.load.latencies, 100), 1)} ms; ` +
            `acknowledged ${engine.load.acknowledged} of ${engine.load.sent}; its workers applied ${engine.applied} deliveries meanwhile; ` +
            `${round(engine.walBytesPerDelivery / 1024, 1)} KB of WAL a delivery acknowledged (the cluster's, receiver and workers); ` +
            `the machine was ${pct(engine.cores.machineBusy)} busy: the engine used ${engine.cores.engine} cores, its database's PostgreSQL backends ${engine.cores.postgres}, ` +
            `the load generator (with the sandbox that answers the engine's polls) ${engine.cores.loadGenerator}; ` +
            generatorLate(engine.load),
        },
        {
          measure: `acknowledgement latency p99 at ${round(half.rate)}/s (half the most it takes)`,
          value: percentile(half.latencies, 99),
          unit: 'ms',
          digits: 1,
          bound: `p50 ${round(percentile(half.latencies, 50), 1)} ms`,
        },
      ],
      details: {
        reference,
        fixedRateReference: {
          tps: fixedReference.tps,
          p50Ms: round(percentile(fixedReference.latencies ?? [], 50), 1),
          p99Ms: round(referenceP99, 1),
          maxMs: round(percentile(fixedReference.latencies ?? [], 100), 1),
        },
        deliveriesPerInsert: round(perInsert, 1),
        phases: Object.fromEntries(Object.entries(phases).map(([name, phase]) => [name, summary(phase)])),
        engine: {
          load: summary(engine.load),
          applied: engine.applied,
          cores: engine.cores,
          peakRssMb: engine.peakRssMb,
          walBytesPerDelivery: engine.walBytesPerDelivery,
        },
        durable: { acknowledged, ...stored.rows[0] },
        machineCpuBusy: round(machineBusy, 2),
        receiverCores: round(receiverCores, 2),
        receiverPeakRssMb: round(receiverPeakRssMb),
      },
    }
  } finally {
    await database.drop()
  }
}

/**
 * The whole engine, as `crm-sync start` runs it, against a sandbox of 200 people under the real budget:
 * once its first sync has settled, deliveries at FIXED_RATE for 2 s to warm up, then for `seconds`,
 * timed from each one's due time. Its workers apply what it takes meanwhile, as they would.
 */
async function engineLatency(ctx: Context, seconds: number) {
  const sandbox = await startSandbox({ seedSize: { people: ctx.quick ? 50 : 200 } })
  const database = await createBenchDatabase(ctx.server, 'ingest_engine')
  try {
    const engine = await spawnEngine(sandbox, { databaseUrl: database.url, nodeOptions: ctx.nodeOptions })
    try {
      await waitFor(
        async () => ((await runsSettled(database.db)) ? true : undefined),
        'the first sync',
        300_000,
        200,
      )
      const next = deliveriesOf(sandbox)
      const targets = [engine.url]
      await openLoop({ targets, next, connections: CONNECTIONS, seconds: 2, rate: FIXED_RATE })
      const walBefore = await walPosition(database.db)
      const machine = cpuMeter()
      const engineBefore = engine.cpuSeconds()
      const backends = backendCpuMeter(database.name)
      const bench = process.cpuUsage()
      const load = await openLoop({ targets, next, connections: CONNECTIONS, seconds, rate: FIXED_RATE })
      const benchUsed = process.cpuUsage(bench)
      // Where the machine's cores went meanwhile: what the engine's answers wait for besides its own work.
      const cores = {
        machineBusy: round(machine.read(), 2),
        engine: round((engine.cpuSeconds() - engineBefore) / load.seconds, 2),
        postgres: round(backends.read() / load.seconds, 2),
        loadGenerator: round((benchUsed.user + benchUsed.system) / 1e6 / load.seconds, 2),
      }
      const walBytes = (await walPosition(database.db)) - walBefore
      const applied = await sql<{ n: number }>`
        select count(*)::int as n from sync.inbox where status = 'processed'
      `.execute(database.db)
      return {
        load,
        cores,
        applied: applied.rows[0]?.n ?? 0,
        peakRssMb: round(engine.peakRss() / 2 ** 20),
        walBytesPerDelivery: Math.round(walBytes / Math.max(1, load.acknowledged)),
      }
    } finally {
      await engine.stop()
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

/**
 * Where the WAL is, in bytes: the whole cluster's, so a figure drawn from it holds on a machine where
 * nothing else writes to PostgreSQL.
 */
async function walPosition(db: Db) {
  const { rows } = await sql<{ at: string }>`
    select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as at
  `.execute(db)
  return Number(rows[0]?.at ?? 0)
}

export const ingest: Scenario = { name: 'ingest', title: 'Durable ingest', run }
