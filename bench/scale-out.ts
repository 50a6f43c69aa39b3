// 7. Scale-out: ingest and backfill with two engine processes on one database, against one. Engines are
// whole (receiver, workers, schedules), each in its own process; the sandbox and the load generator run
// here. Ingest: 32 connections spread over the engines' receivers, nested deliveries that the workers
// apply as they come. Backfill: the first sync of an account from empty under the real budget, which
// every replica shares.
import { sql } from 'kysely'
import { startSandbox } from '../sandbox/index.ts'
import { readRuns } from '../src/store/runs.ts'
import { personUpdates } from './ingest.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { type EngineProcess, spawnEngine } from './support/engines.ts'
import { closedLoop, type Delivery } from './support/load.ts'
import { runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Figure, type Scenario } from './support/scenario.ts'
import { round, waitFor } from './support/stats.ts'

const CONNECTIONS = 32
const BUDGET = { requests: 50, windowSeconds: 10 }

async function processed(database: BenchDatabase): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.inbox where status = 'processed'
  `.execute(database.db)
  return rows[0]?.n ?? 0
}

async function ingestWith(
  ctx: Context,
  database: BenchDatabase,
  engines: EngineProcess[],
  next: () => Delivery,
) {
  const targets = engines.map((engine) => engine.url)
  const seconds = ctx.quick ? 3 : 8
  await closedLoop({ targets, next, connections: CONNECTIONS, seconds: ctx.quick ? 1 : 2 })
  const before = await processed(database)
  const load = await closedLoop({ targets, next, connections: CONNECTIONS, seconds })
  const applied = (await processed(database)) - before
  return {
    acknowledged: load.rate,
    applied: applied / load.seconds,
    errors: load.errors,
    statuses: load.statuses,
  }
}

async function ingest(ctx: Context) {
  const next = await personUpdates(ctx.quick ? 50 : 200)
  const sandbox = await startSandbox({
    seedSize: 10,
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
  const database = await createBenchDatabase(ctx.server, 'scale_ingest')
  const engines: EngineProcess[] = []
  const env = { INCREMENTAL_SYNC_INTERVAL: '86400', CRM_RATE_LIMIT: '10000', RESERVATION_RATE_LIMIT: '10000' }
  try {
    engines.push(
      await spawnEngine(sandbox, {
        nodeOptions: ctx.nodeOptions,
        databaseUrl: database.url,
        env,
      }),
    )
    await waitFor(async () => ((await runsSettled(database.db)) ? true : undefined), 'the first sync', 60_000)
    ctx.log('ingest: one engine')
    const one = await ingestWith(ctx, database, engines, next)
    engines.push(
      await spawnEngine(sandbox, {
        nodeOptions: ctx.nodeOptions,
        databaseUrl: database.url,
        env,
      }),
    )
    ctx.log('ingest: two engines')
    const two = await ingestWith(ctx, database, engines, next)
    return { one, two }
  } finally {
    await Promise.all(engines.map((engine) => engine.stop()))
    await database.drop()
    await sandbox.stop()
  }
}

/** The first sync of a seeded account under the real budget, by `count` engines started together. */
async function backfillWith(ctx: Context, count: number) {
  const seed = ctx.quick
    ? { people: 5_000, companies: 2_000, deals: 2_000, projects: 1_000 }
    : { people: 30_000, companies: 10_000, deals: 10_000, projects: 5_000 }
  const sandbox = await startSandbox({ seedSize: seed, behaviour: { crmRateLimit: BUDGET } })
  const database = await createBenchDatabase(ctx.server, `scale_backfill_${count}`)
  const env = { INCREMENTAL_SYNC_INTERVAL: '86400', CRM_RATE_LIMIT: String(BUDGET.requests) }
  const engines: EngineProcess[] = []
  try {
    engines.push(
      ...(await Promise.all(
        Array.from({ length: count }, () =>
          spawnEngine(sandbox, { databaseUrl: database.url, env, nodeOptions: ctx.nodeOptions }),
        ),
      )),
    )
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      300_000,
      200,
    )
    const [run] = await readRuns(database.db, { limit: 1 })
    if (!run?.started_at || !run.finished_at || run.status !== 'succeeded')
      throw new Error(`the first sync ended ${run?.status}: ${run?.error}`)
    const records = run.resources.reduce((sum, sweep) => sum + (sweep.records ?? 0), 0)
    const seconds = (run.finished_at.getTime() - run.started_at.getTime()) / 1000
    const counters = sandbox.control.counters().crm
    return {
      engines: count,
      seed,
      records,
      seconds: round(seconds, 1),
      rate: records / seconds,
      requests: counters.requests,
      throttled: counters.statuses['429'] ?? 0,
      cpuSeconds: engines.map((engine) => round(engine.cpuSeconds(), 1)),
    }
  } finally {
    await Promise.all(engines.map((engine) => engine.stop()))
    await database.drop()
    await sandbox.stop()
  }
}

async function run(ctx: Context) {
  const ingested = await ingest(ctx)
  ctx.log('backfill: one engine')
  const one = await backfillWith(ctx, 1)
  ctx.log('backfill: two engines')
  const two = await backfillWith(ctx, 2)
  const figures: Figure[] = [
    {
      measure: 'deliveries acknowledged per second, two engines',
      value: ingested.two.acknowledged,
      unit: '/s',
      reference: { value: ingested.one.acknowledged, unit: '/s', label: 'one engine' },
      bound:
        'the database work per delivery and the 2 cores, shared by both engines, PostgreSQL and the load generator (see Durable ingest)',
    },
    {
      measure: 'deliveries applied per second while ingesting, two engines',
      value: ingested.two.applied,
      unit: '/s',
      reference: { value: ingested.one.applied, unit: '/s', label: 'one engine' },
    },
    {
      measure: 'records per second, first sync under the real budget, two engines',
      value: two.rate,
      unit: '/s',
      reference: { value: one.rate, unit: '/s', label: 'one engine' },
      bound: `the budget, which both engines share: ${two.requests} requests in ${two.seconds} s (one engine: ${one.requests} in ${one.seconds} s); one sweep per resource at a time, whichever engine takes it`,
    },
    {
      measure: '429 answers with two engines sharing the budget',
      value: two.throttled,
      unit: '',
      reference: { value: one.throttled, unit: '', label: 'one engine' },
      target: atMost(two.throttled, 0, '0'),
    },
  ]
  return {
    settings: {
      connections: CONNECTIONS,
      ingest: 'nested person updates; workers apply them while the load runs',
      backfill: `${JSON.stringify(two.seed)}, budget ${BUDGET.requests} requests / ${BUDGET.windowSeconds} s`,
      engines: 'each in its own process (start()), one database',
    },
    figures,
    details: { ingest: ingested, backfill: { one, two } },
  }
}

export const scaleOut: Scenario = { name: 'scale-out', title: 'Scale-out', run }
