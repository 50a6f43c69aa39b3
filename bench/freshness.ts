// 5. Freshness: seconds from a change to its row in the mirror, p50 and p99, with 50 ms of upstream
// latency and lean hooks (every delivery asks for the record to be fetched). Each change is of another
// person, so that each row's first write that holds its change tells when the change got there.
//
// Three parts, each with its own sandbox, database and engine (its own process, as `npm start` runs it):
// - budget lifted (the reference): 20 changes/s for 30 s, CRM_RATE_LIMIT 10000 and no sandbox limit,
//   no incremental run; delivery to row, as before.
// - real budget: the same 20 changes/s for 30 s under the CRM's 50 requests / 10 s, enforced by the
//   engine (CRM_RATE_LIMIT 50) and the sandbox (crmRateLimit), with incremental runs every
//   INCREMENTAL_SYNC_INTERVAL (default 10 s) spending the same budget; change to row.
// - the curve: the real budget at 20, 50, 100 and 200 changes/s, 20 s each.
// Rows are watched from outside (every 100 ms); a row's time is its `_synced_at` when it is first seen
// holding its change, and a write that several rows share (an index page: a sweep's or a catch-up
// walk's) is told apart from a show's (one row). Requests are counted by the sandbox, per route. The
// sandbox sends deliveries one at a time, each after the receiver answered the last: past the rate the
// receiver acknowledges one by one, deliveries arrive late (the webhook leg, reported per point).
import { sql } from 'kysely'
import { startSandbox } from '../sandbox/index.ts'
import type { Db } from '../src/store/database.ts'
import { createBenchDatabase } from './support/database.ts'
import {
  engineVersion,
  routeCounts,
  routeDelta,
  routeKind,
  scrapeMetrics,
  sumOf,
} from './support/engine-metrics.ts'
import { spawnEngine } from './support/engines.ts'
import { runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Figure, type Scenario } from './support/scenario.ts'
import { percentile, round, sleep, waitFor } from './support/stats.ts'

const LATENCY_MS = 50
const HEADLINE_RATE = 20
const CURVE_RATES = [20, 50, 100, 200]
const POLL_MS = 100
/** How long the refreshes left at convergence are waited for (the requests "until idle" count them). */
const DRAIN_MS = 60_000
/** The CRM's real budget. */
const BUDGET = { requests: 50, windowSeconds: 10 }
/** What another team measured from outside at 20 changes/s under the real budget (the brief of this bench). */
const MEASURED_OUTSIDE = { p50: 3.97, p99: 9.45, shows: 139 }

interface PointSettings {
  rate: number
  seconds: number
  budget: 'lifted' | 'real'
  /** INCREMENTAL_SYNC_INTERVAL of the engine. */
  intervalSeconds: number
}

interface Seen {
  /** `_synced_at` of the first write seen holding the change. */
  syncedAt: number
  /** When the bench saw it (at most POLL_MS later). */
  seenAt: number
  /** Rows written by the same statement (now() of one transaction): more than one is a sweep's page. */
  batch: number
}

const summary = (values: number[]) => ({
  n: values.length,
  p50: round(percentile(values, 50), 3),
  p90: round(percentile(values, 90), 3),
  p99: round(percentile(values, 99), 3),
  max: round(percentile(values, 100), 3),
})

/** Watches the mirror until every id holds its change: each id's first write that does. */
function watchRows(db: Db, ids: number[], since: Date) {
  const seen = new Map<number, Seen>()
  let stopped = false
  const done = (async () => {
    while (!stopped && seen.size < ids.length) {
      const pending = ids.filter((id) => !seen.has(id))
      const { rows } = await sql<{ id: number; synced_at: Date; batch: number }>`
        with recent as (
          select id, first_name, _synced_at, count(*) over (partition by _synced_at)::int as batch
          from crm.people where _synced_at >= ${since}
        )
        select id, _synced_at as synced_at, batch from recent
        where first_name like 'fresh %' and id = any(${pending}::bigint[])
      `.execute(db)
      const now = Date.now()
      for (const row of rows)
        seen.set(row.id, { syncedAt: row.synced_at.getTime(), seenAt: now, batch: row.batch })
      if (seen.size < ids.length) await sleep(POLL_MS)
    }
  })()
  return {
    seen,
    done,
    stop() {
      stopped = true
    },
  }
}

/** Refreshes waiting or running, and deliveries left in the inbox. */
async function backlog(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select (select count(*)::int from pgboss.job
      where name = 'record-refresh' and state in ('created', 'retry', 'active'))
      + (select count(*)::int from sync.inbox where status = 'accepted') as n
  `.execute(db)
  return rows[0]?.n ?? 0
}

/** The requests of a phase: the CRM's (people's shows, index pages, counts, the rest) and the reservation service's. */
function requestsOf(delta: Record<string, number>) {
  const out = { crm: 0, peopleShows: 0, peopleIndex: 0, peopleCount: 0, otherCrm: 0, reservation: 0 }
  for (const [route, n] of Object.entries(delta)) {
    const { resource, kind } = routeKind(route)
    if (route.startsWith('reservation ')) {
      out.reservation += n
      continue
    }
    out.crm += n
    if (resource === 'crm.people' && kind === 'show') out.peopleShows += n
    else if (resource === 'crm.people' && kind === 'index') out.peopleIndex += n
    else if (resource === 'crm.people' && kind === 'count') out.peopleCount += n
    else out.otherCrm += n
  }
  return out
}

/** Refresh jobs of the phase, from pg-boss's table: how long they waited to start and how long they ran. */
async function refreshJobs(db: Db, since: Date) {
  const { rows } = await sql<{ queued: number | null; ran: number | null }>`
    select extract(epoch from started_on - created_on)::float8 as queued,
      extract(epoch from completed_on - started_on)::float8 as ran
    from pgboss.job where name = 'record-refresh' and created_on >= ${since}
  `.execute(db)
  const queued = rows.flatMap((row) => (row.queued === null ? [] : [row.queued]))
  const ran = rows.flatMap((row) => (row.ran === null ? [] : [row.ran]))
  return { jobs: rows.length, queuedSeconds: summary(queued), runningSeconds: summary(ran) }
}

/**
 * The sweeps of crm.people that started in the phase: how many, their requests and pages, and each one's
 * start and end in seconds from the first change (its run's creation too: a sweep waits for a worker).
 */
async function peopleSweeps(db: Db, since: Date, until: Date) {
  const { rows } = await sql<{
    created: number
    started: number | null
    finished: number | null
    requests: number
    pages: number
    status: string
  }>`
    select extract(epoch from r.created_at - ${since}::timestamptz)::float8 as created,
      extract(epoch from s.started_at - ${since}::timestamptz)::float8 as started,
      extract(epoch from s.finished_at - ${since}::timestamptz)::float8 as finished,
      s.api_requests as requests, s.pages, s.status
    from sync.run_resources s join sync.runs r on r.id = s.run_id
    where s.resource = 'crm.people' and s.started_at >= ${since} and s.started_at <= ${until}
    order by s.started_at
  `.execute(db)
  const lengths = rows.flatMap((row) =>
    row.started === null || row.finished === null ? [] : [row.finished - row.started],
  )
  return {
    sweeps: rows.length,
    requests: rows.reduce((sum, row) => sum + row.requests, 0),
    pages: rows.reduce((sum, row) => sum + row.pages, 0),
    meanSeconds: lengths.length ? round(lengths.reduce((a, b) => a + b, 0) / lengths.length, 2) : null,
    timeline: rows.map((row) => ({
      created: round(row.created, 1),
      started: row.started === null ? null : round(row.started, 1),
      finished: row.finished === null ? null : round(row.finished, 1),
      requests: row.requests,
      pages: row.pages,
      status: row.status,
    })),
  }
}

async function measurePoint(ctx: Context, settings: PointSettings) {
  const { rate, seconds, budget, intervalSeconds } = settings
  const lifted = budget === 'lifted'
  const changes = Math.round(rate * seconds)
  const sandbox = await startSandbox({
    seedSize: { people: changes + 50 },
    behaviour: lifted ? { crmRateLimit: null } : { crmRateLimit: BUDGET },
    faults: { crm: { latencyMs: LATENCY_MS } },
  })
  const database = await createBenchDatabase(ctx.server, `freshness_${budget}_${rate}`)
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    hooks: true,
    env: {
      HOOK_OBJECT_TYPE: 'lean',
      INCREMENTAL_SYNC_INTERVAL: lifted ? '86400' : String(intervalSeconds),
      CRM_RATE_LIMIT: lifted ? '10000' : String(BUDGET.requests),
    },
  })
  try {
    await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 30_000)
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      180_000,
    )
    // The first sync spent the budget of its window; the changes start in the steady state (a window
    // later: the budget then holds what the incremental runs left of it).
    if (!lifted) await sleep(BUDGET.windowSeconds * 1000)

    ctx.log(
      `${budget} budget: ${changes} changes at ${rate}/s, ${LATENCY_MS} ms upstream latency` +
        (lifted ? '' : `, INCREMENTAL_SYNC_INTERVAL=${intervalSeconds}`),
    )
    const ids = sandbox.control.crm.liveIds('people').slice(0, changes)
    const changedAt = new Map<number, number>()
    const routesBefore = routeCounts(sandbox)
    const throttledBefore = sandbox.control.counters().crm.rateLimited
    const metricsBefore = await scrapeMetrics(engine.url)
    const { rows: clock } = await sql<{ now: Date }>`select clock_timestamp() as now`.execute(database.db)
    const since = clock[0]?.now ?? new Date()
    const watcher = watchRows(database.db, ids, since)
    const started = performance.now()
    for (let i = 0; i < ids.length; i++) {
      const wait = started + (i * 1000) / rate - performance.now()
      if (wait > 0) await sleep(wait)
      const id = ids[i] as number
      changedAt.set(id, Date.now())
      sandbox.control.crm.update('people', id, { first_name: `fresh ${i}` })
    }
    const lastChange = Date.now()
    const pace = ids.length / ((performance.now() - started) / 1000)
    const timeoutMs = (intervalSeconds + 180) * 1000
    const timer = setTimeout(() => watcher.stop(), timeoutMs)
    await watcher.done.finally(() => clearTimeout(timer))
    if (watcher.seen.size < ids.length)
      throw new Error(
        `${watcher.seen.size} of ${ids.length} changes in the mirror after ${timeoutMs / 1000} s`,
      )
    const convergedAt = new Date()
    const convergedAfterLast = (Date.now() - lastChange) / 1000
    const atConvergence = requestsOf(routeDelta(routeCounts(sandbox), routesBefore))
    const metricsAtConvergence = await scrapeMetrics(engine.url)
    // The refreshes still queued are mostly skipped (an index page answered them), but each costs a
    // worker's turn: the wait for them is bounded, and what is left then is reported.
    const backlogAtConvergence = await backlog(database.db)
    const drainStart = Date.now()
    let backlogLeft = backlogAtConvergence
    while (backlogLeft > 0 && Date.now() - drainStart < DRAIN_MS) {
      await sleep(500)
      backlogLeft = await backlog(database.db)
    }
    const drainSeconds = (Date.now() - drainStart) / 1000
    const untilIdleRoutes = routeDelta(routeCounts(sandbox), routesBefore)
    const untilIdle = requestsOf(untilIdleRoutes)
    const metricsAfter = await scrapeMetrics(engine.url)

    const { rows } = await sql<{ id: number; received_at: Date }>`
      select record_id as id, min(received_at) as received_at from sync.inbox
      where model = 'person' and event = 'update' and record_id = any(${ids}::bigint[])
      group by record_id
    `.execute(database.db)
    const receivedAt = new Map(rows.map((row) => [Number(row.id), row.received_at.getTime()]))
    const changeToRow: number[] = []
    const changeToSeen: number[] = []
    const deliveryToRow: number[] = []
    const webhookLeg: number[] = []
    // One row written alone is a show's; several written by one statement, an index page's (a sweep's,
    // or the catch-up walk a backlog of refreshes starts: see src/sync/refresh/catch-up.ts).
    const bySource = { page: [] as number[], show: [] as number[] }
    for (const [id, seen] of watcher.seen) {
      const changed = changedAt.get(id) ?? Number.NaN
      const delay = (seen.syncedAt - changed) / 1000
      changeToRow.push(delay)
      changeToSeen.push((seen.seenAt - changed) / 1000)
      bySource[seen.batch > 1 ? 'page' : 'show'].push(delay)
      const received = receivedAt.get(id)
      if (received !== undefined) {
        deliveryToRow.push((seen.syncedAt - received) / 1000)
        webhookLeg.push((received - changed) / 1000)
      }
    }
    const delta = (samples: typeof metricsBefore, name: string, match: Record<string, string> = {}) =>
      round(sumOf(samples, name, match) - sumOf(metricsBefore, name, match), 2)
    const engineCounters = (samples: typeof metricsBefore) => ({
      budgetWaitSeconds: delta(samples, 'crm_sync_upstream_throttled_seconds_total', { upstream: 'crm' }),
      refreshesSkipped: delta(samples, 'crm_sync_refreshes_skipped_total', { resource: 'crm.people' }),
      refreshJobsDone: delta(samples, 'crm_sync_jobs_total', { kind: 'record-refresh' }),
      peopleFetched: delta(samples, 'crm_sync_records_applied_total', {
        resource: 'crm.people',
        source: 'fetch',
      }),
    })
    return {
      settings,
      changes,
      pace: round(pace, 1),
      measured: watcher.seen.size,
      changeToRow: summary(changeToRow),
      changeToSeen: summary(changeToSeen),
      deliveryToRow: summary(deliveryToRow),
      webhookLeg: summary(webhookLeg),
      firstWrite: { page: summary(bySource.page), show: summary(bySource.show) },
      deliveriesReceived: receivedAt.size,
      convergedAfterLastChange: round(convergedAfterLast, 2),
      backlog: {
        atConvergence: backlogAtConvergence,
        left: backlogLeft,
        afterSeconds: round(drainSeconds, 1),
      },
      requests: { atConvergence, untilIdle, routesUntilIdle: untilIdleRoutes },
      requestsPerChange: round(atConvergence.crm / changes, 3),
      throttled429: sandbox.control.counters().crm.rateLimited - throttledBefore,
      engine: {
        atConvergence: engineCounters(metricsAtConvergence),
        untilIdle: engineCounters(metricsAfter),
      },
      refreshJobs: await refreshJobs(database.db, since),
      peopleSweeps: await peopleSweeps(database.db, since, convergedAt),
    }
  } finally {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
}

type Point = Awaited<ReturnType<typeof measurePoint>>

const OPTIONS = {
  interval: 'INCREMENTAL_SYNC_INTERVAL of the engine in the real-budget parts (default 10)',
  rates: 'changes per second of the curve under the real budget (default 20,50,100,200)',
  'curve-seconds': 'seconds of changes per point of the curve (default 20; 8 with --quick)',
  parts: 'lifted, real, curve, comma-separated (default all three)',
}

function numberOption(ctx: Context, name: string, fallback: number): number {
  const value = Number(ctx.options[name] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`freshness.${name}: not a number > 0`)
  return value
}

/** People index pages not read by the sweeps of crm.people: the catch-up walks' (an estimate: sweeps at the edges of the phase). */
function catchUpPages(point: Point): number {
  return Math.max(0, point.requests.atConvergence.peopleIndex - point.peopleSweeps.pages)
}

/** What the sweeps, the catch-up walks and the refreshes did: the numbers that explain a real-budget point. */
function pointBound(point: Point): string {
  const { atConvergence } = point.requests
  const engine = point.engine.atConvergence
  const { page, show } = point.firstWrite
  return (
    `${point.changes} changes; first written by an index page ${page.n} (p50 ${page.p50} s, p99 ${page.p99} s), ` +
    `by a show ${show.n}${show.n ? ` (p50 ${show.p50} s, p99 ${show.p99} s)` : ''}; ` +
    `${atConvergence.crm} CRM requests until the last change was in: ${atConvergence.peopleShows} people shows, ` +
    `${atConvergence.peopleIndex} people index pages (${point.peopleSweeps.pages} by ${point.peopleSweeps.sweeps} sweeps of crm.people, ` +
    `about ${catchUpPages(point)} by catch-up walks), ${atConvergence.peopleCount} counts, ${atConvergence.otherCrm} other CRM; ` +
    `sweeps of crm.people ${point.peopleSweeps.meanSeconds} s each on average; ` +
    `webhook leg p50 ${point.webhookLeg.p50} s, p99 ${point.webhookLeg.p99} s (${point.deliveriesReceived} of ${point.changes} deliveries in by the end); ` +
    `${engine.refreshesSkipped} refreshes skipped, ${point.backlog.atConvergence} still queued at convergence; ` +
    `${engine.budgetWaitSeconds} s waited for the budget in all; refresh jobs queued p50 ${point.refreshJobs.queuedSeconds.p50} s, ` +
    `ran p50 ${point.refreshJobs.runningSeconds.p50} s`
  )
}

async function run(ctx: Context) {
  const version = engineVersion()
  const parts = new Set((ctx.options.parts ?? 'lifted,real,curve').split(',').filter(Boolean))
  const interval = numberOption(ctx, 'interval', 10)
  const seconds = ctx.quick ? 10 : 30
  const curveSeconds = numberOption(ctx, 'curve-seconds', ctx.quick ? 8 : 20)
  const rates = (ctx.options.rates ?? CURVE_RATES.join(',')).split(',').map(Number)
  if (!rates.every((rate) => Number.isFinite(rate) && rate > 0))
    throw new Error(`freshness.rates: expected numbers > 0, got ${ctx.options.rates}`)

  const figures: Figure[] = []
  const details: Record<string, unknown> = {}

  let lifted: Point | undefined
  if (parts.has('lifted')) {
    lifted = await measurePoint(ctx, {
      rate: HEADLINE_RATE,
      seconds,
      budget: 'lifted',
      intervalSeconds: 86_400,
    })
    details.lifted = lifted
    const { deliveryToRow, webhookLeg } = lifted
    figures.push(
      {
        measure: `budget lifted: delivery to row, p50, ${HEADLINE_RATE} changes/s`,
        value: deliveryToRow.p50,
        unit: 's',
        digits: 2,
        reference: {
          value: webhookLeg.p50,
          unit: 's',
          label: 'change to delivery (the webhook leg), p50',
          digits: 3,
        },
        target: atMost(deliveryToRow.p50, 1, '< 1 s'),
      },
      {
        measure: `budget lifted: delivery to row, p99, ${HEADLINE_RATE} changes/s`,
        value: deliveryToRow.p99,
        unit: 's',
        digits: 2,
        reference: { value: webhookLeg.p99, unit: 's', label: 'change to delivery, p99', digits: 3 },
        target: atMost(deliveryToRow.p99, 3, '< 3 s'),
        bound:
          'a delivery job, then a refresh job (each woken by NOTIFY, polled every 0.5 s otherwise), then either the quiet wait ' +
          `(REFRESH_QUIET_MS) and one show at ${LATENCY_MS} ms, or, while refreshes queue up, the catch-up walk's next index page ` +
          `(at most one a second); change to row p50 ${lifted.changeToRow.p50} s, p99 ${lifted.changeToRow.p99} s; ` +
          `${lifted.requests.atConvergence.peopleShows} shows, ${lifted.requests.atConvergence.peopleIndex} index pages; ` +
          'a row written from a page sent before its own delivery arrived counts negative',
      },
    )
  }

  if (parts.has('real')) {
    const real = await measurePoint(ctx, {
      rate: HEADLINE_RATE,
      seconds,
      budget: 'real',
      intervalSeconds: interval,
    })
    details.real = real
    const { atConvergence } = real.requests
    figures.push(
      {
        measure: `real budget: change to row, p50, ${HEADLINE_RATE} changes/s`,
        value: real.changeToRow.p50,
        unit: 's',
        digits: 2,
        reference: lifted && {
          value: lifted.changeToRow.p50,
          unit: 's',
          label: 'budget lifted, change to row, p50',
          digits: 2,
        },
        bound: `measured from outside by another team: p50 ${MEASURED_OUTSIDE.p50} s, p99 ${MEASURED_OUTSIDE.p99} s, ${MEASURED_OUTSIDE.shows} shows`,
      },
      {
        measure: `real budget: change to row, p99, ${HEADLINE_RATE} changes/s`,
        value: real.changeToRow.p99,
        unit: 's',
        digits: 2,
        reference: lifted && {
          value: lifted.changeToRow.p99,
          unit: 's',
          label: 'budget lifted, change to row, p99',
          digits: 2,
        },
        target: atMost(real.changeToRow.p99, 3, '< 3 s'),
        bound: pointBound(real),
      },
      {
        measure: `real budget: CRM requests per change, ${HEADLINE_RATE} changes/s (until the last change was in)`,
        value: real.requestsPerChange,
        unit: '',
        digits: 2,
        reference: { value: 1, unit: '', label: 'one show per change' },
        bound:
          `${atConvergence.peopleShows} people shows, ${atConvergence.peopleIndex} people index pages, ` +
          `${atConvergence.peopleCount} counts, ${atConvergence.otherCrm} other CRM requests; ` +
          `${real.requests.untilIdle.crm} until no refresh was left or ${DRAIN_MS / 1000} s later (${real.requests.untilIdle.peopleShows} shows; ` +
          `${real.backlog.atConvergence} refreshes queued at convergence, ${real.backlog.left} after ${real.backlog.afterSeconds} s); ` +
          `the budget allows ${round(((seconds + real.convergedAfterLastChange) * BUDGET.requests) / BUDGET.windowSeconds)} ` +
          `in the ${round(seconds + real.convergedAfterLastChange, 1)} s from the first change until the last was in`,
      },
    )
  }

  if (parts.has('curve')) {
    const curve: Point[] = []
    const failed: Record<string, string> = {}
    for (const rate of rates) {
      let point: Point
      try {
        point = await measurePoint(ctx, {
          rate,
          seconds: curveSeconds,
          budget: 'real',
          intervalSeconds: interval,
        })
      } catch (error) {
        // A point that does not converge in time is a finding, not the end of the curve.
        const message = error instanceof Error ? error.message : String(error)
        ctx.log(`${rate}/s: ${message}`)
        failed[rate] = message
        figures.push({
          measure: `real budget curve: change to row, p99, ${rate} changes/s for ${curveSeconds} s`,
          value: Number.NaN,
          unit: 's',
          bound: `failed: ${message}`,
        })
        continue
      }
      curve.push(point)
      figures.push({
        measure: `real budget curve: change to row, p99, ${rate} changes/s for ${curveSeconds} s`,
        value: point.changeToRow.p99,
        unit: 's',
        digits: 2,
        reference: { value: point.changeToRow.p50, unit: 's', label: 'p50', digits: 2 },
        target: rate === HEADLINE_RATE ? atMost(point.changeToRow.p99, 3, '< 3 s') : undefined,
        bound: `${point.requestsPerChange} CRM requests per change; ${pointBound(point)}`,
      })
    }
    details.curve = curve.map((point) => ({
      rate: point.settings.rate,
      changes: point.changes,
      pace: point.pace,
      p50: point.changeToRow.p50,
      p99: point.changeToRow.p99,
      max: point.changeToRow.max,
      requestsPerChange: point.requestsPerChange,
      shows: point.requests.atConvergence.peopleShows,
      indexPages: point.requests.atConvergence.peopleIndex,
      counts: point.requests.atConvergence.peopleCount,
      otherCrm: point.requests.atConvergence.otherCrm,
      firstWrite: { page: point.firstWrite.page.n, show: point.firstWrite.show.n },
      sweepPages: point.peopleSweeps.pages,
      catchUpPages: catchUpPages(point),
      webhookLeg: { p50: point.webhookLeg.p50, p99: point.webhookLeg.p99 },
      deliveriesReceived: point.deliveriesReceived,
      webhookLegP99: point.webhookLeg.p99,
    }))
    details.curvePoints = curve
    if (Object.keys(failed).length) details.curveFailed = failed
  }

  return {
    settings: {
      hooks: 'lean (every delivery asks for its record to be fetched)',
      upstreamLatencyMs: LATENCY_MS,
      changes: `each of another person; ${HEADLINE_RATE}/s for ${seconds} s (lifted and real), curve ${rates.join(', ')}/s for ${curveSeconds} s each`,
      lifted:
        'CRM_RATE_LIMIT 10000, no sandbox limit, INCREMENTAL_SYNC_INTERVAL 86400 (no run but the first)',
      real: `${BUDGET.requests} requests / ${BUDGET.windowSeconds} s in the engine (CRM_RATE_LIMIT) and the sandbox (crmRateLimit), INCREMENTAL_SYNC_INTERVAL ${interval}; the changes start a window after the first sync`,
      measure: `change to row: the row's _synced_at when the bench first sees it hold the change (polled every ${POLL_MS} ms) minus the time of the change; delivery to row from the inbox's received_at`,
      engine: `its own process, as npm start runs it; the working tree at the start: ${JSON.stringify(version)}`,
    },
    figures,
    details,
  }
}

export const freshness: Scenario = { name: 'freshness', title: 'Freshness', options: OPTIONS, run }
