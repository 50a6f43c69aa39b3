// 4. Requests per change, for each HOOK_OBJECT_TYPE, with the engine as `npm start` runs it (its own
// process) against the sandbox under the real budget: a mixed workload (updates, tags, deletions,
// creations over the four hooked resources, paced), a burst of 1,000 updates over 100 people, and an
// idle incremental cycle of every resource. Requests are counted by the sandbox.
// Then the idle cost as users pay it: the engine as `npm start` runs it with INCREMENTAL_SYNC_INTERVAL=10,
// nothing changing, for whole cycles over at least a minute (two by default): requests per minute and
// per resource per cycle, from the sandbox's counters per route and from the runs' api_requests.
import { sql } from 'kysely'
import { type Sandbox, SandboxError, startSandbox } from '../sandbox/index.ts'
import { HOOK_OBJECT_TYPES } from '../src/config/index.ts'
import { createLogger } from '../src/log.ts'
import type { Db } from '../src/store/database.ts'
import { startJobQueue } from '../src/sync/job-queue.ts'
import { startRun, sweepEnqueuer } from '../src/sync/runs.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { engineVersion, routeCounts, routeDelta, routeKind } from './support/engine-metrics.ts'
import { spawnEngine } from './support/engines.ts'
import { firstDifference, HOOKED, runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Figure, type Scenario } from './support/scenario.ts'
import { round, sleep, waitFor } from './support/stats.ts'
import { finishedRun } from './support/sweeps.ts'

type ObjectType = (typeof HOOK_OBJECT_TYPES)[number]

const SEED = { people: 120, companies: 40, deals: 40, projects: 20, tasks: 40, contacts: 40, bookings: 40 }
const BURST = { records: 100, rounds: 10 }
const WINDOW_MS = 10_000
/** The idle measure: the shortest interval allowed, nothing changing, whole cycles after a warm-up. */
const IDLE = { intervalSeconds: 10, warmupCycles: 2, seconds: 120, quickSeconds: 60 }
/** What webhooks and sweeps spend, without the freshness polls (their cost: the freshness-kinds bench). */
const NO_POLLS = { ACTIVITY_POLL_SECONDS: '0', RESERVATION_POLL_SECONDS: '0' }
/** What another team measured from outside on an idle engine at INCREMENTAL_SYNC_INTERVAL=10. */
const IDLE_MEASURED_OUTSIDE = { perMinute: 81, usersPerCycle: 2.33, othersPerCycle: 2 }

/** A small deterministic random source. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

/** One random change of a hooked record, as the convergence tests make them; false when refused (a tag twice). */
function randomChange(sandbox: Sandbox, next: () => number, i: number): boolean {
  try {
    change(sandbox, next, i)
    return true
  } catch (error) {
    if (error instanceof SandboxError) return false
    throw error
  }
}

function change(sandbox: Sandbox, next: () => number, i: number): void {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T
  const { collection } = pick(HOOKED)
  const crm = sandbox.control.crm
  const id = pick(crm.liveIds(collection))
  const roll = next()
  if (roll < 0.45) crm.update(collection, id, { name: `changed ${i}` })
  else if (roll < 0.6) crm.addTag(collection, id, `tag-${i % 7}`)
  else if (roll < 0.7) {
    const [tag] = (crm.get(collection, id)?.tags ?? []) as { id: number }[]
    if (tag) crm.removeTag(collection, id, tag.id)
    else crm.addTag(collection, id, `tag-${i % 7}`)
  } else if (roll < 0.85) crm.destroy(collection, id)
  else if (collection === 'people' || collection === 'companies') crm.create(collection, { name: `new ${i}` })
  else crm.update(collection, id, { description: `text ${i}` })
}

function tally(sandbox: Sandbox) {
  const counters = sandbox.control.counters()
  return {
    requests: counters.crm.requests + counters.reservation.requests,
    shows: Object.entries(counters.crm.routes)
      .filter(([route]) => /^GET \/api\/\w+\/:id$/.test(route))
      .reduce((sum, [, count]) => sum + count, 0),
    changes: Object.values(counters.changes).reduce((sum, count) => sum + count, 0),
    throttled: (counters.crm.statuses['429'] ?? 0) + (counters.reservation.statuses['429'] ?? 0),
  }
}

const delta = (after: ReturnType<typeof tally>, before: ReturnType<typeof tally>) => ({
  requests: after.requests - before.requests,
  shows: after.shows - before.shows,
  changes: after.changes - before.changes,
  throttled: after.throttled - before.throttled,
})

/** No refresh or delivery waiting or running. */
async function queuesIdle(db: Db): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select (select count(*)::int from pgboss.job
      where name = 'record-refresh' and state in ('created', 'retry', 'active'))
      + (select count(*)::int from sync.inbox where status = 'accepted') as n
  `.execute(db)
  return rows[0]?.n === 0
}

async function idleCycle(database: BenchDatabase) {
  const queue = await startJobQueue(database.url, createLogger({ level: 'silent' }))
  try {
    const started = await startRun(
      { db: database.db, enqueue: sweepEnqueuer(queue), reservationEnabled: true },
      { mode: 'incremental', requestedBy: 'bench' },
    )
    if (started.status !== 'started') throw new Error(`idle run refused: ${JSON.stringify(started)}`)
    const run = await finishedRun(database.db, started.runId, 120_000)
    return Object.fromEntries(run.resources.map((sweep) => [sweep.resource, sweep.api_requests]))
  } finally {
    await queue.stop({ graceful: false })
  }
}

async function measure(ctx: Context, objectType: ObjectType) {
  const quick = ctx.quick
  // The kinder variant: a tag change bumps its record and sends its webhook. With the least helpful
  // default, tags show only to a full sweep, and this scenario (no sweep but the first) measures the
  // cost of what webhooks announce.
  const sandbox = await startSandbox({
    seedSize: SEED,
    seed: 7,
    behaviour: { childChangesTouchParent: true },
  })
  const database = await createBenchDatabase(ctx.server, `requests_${objectType}`)
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    hooks: true,
    env: { HOOK_OBJECT_TYPE: objectType, INCREMENTAL_SYNC_INTERVAL: '86400', ...NO_POLLS },
  })
  try {
    await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 30_000)
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      120_000,
    )

    ctx.log(`${objectType}: idle incremental cycle`)
    const idle = await idleCycle(database)

    const mixedCount = quick ? 30 : 60
    ctx.log(`${objectType}: mixed workload of ${mixedCount} changes at 10/s`)
    let before = tally(sandbox)
    const next = random(11)
    for (let i = 0; i < mixedCount; i++) {
      randomChange(sandbox, next, i)
      await sleep(100)
    }
    await sandbox.control.drainDeliveries()
    const mixedStart = Date.now()
    let difference: string | null = null
    await waitFor(
      async () => {
        difference = await firstDifference(database.db, sandbox)
        return difference === null ? true : undefined
      },
      'convergence after the mixed workload',
      180_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; still different: ${difference}`)
    })
    const mixedConverged = (Date.now() - mixedStart) / 1000
    await waitFor(
      async () => ((await queuesIdle(database.db)) ? true : undefined),
      'idle queues',
      120_000,
      200,
    )
    const mixed = delta(tally(sandbox), before)

    ctx.log(`${objectType}: burst of ${BURST.rounds * BURST.records} updates over ${BURST.records} people`)
    await sleep(WINDOW_MS) // a full budget, as a burst after a quiet spell would find it
    const ids = sandbox.control.crm.liveIds('people').slice(0, BURST.records)
    before = tally(sandbox)
    const burstStart = Date.now()
    for (let round = 0; round < BURST.rounds; round++) {
      for (const id of ids) sandbox.control.crm.update('people', id, { first_name: `round ${round}` })
    }
    await sandbox.control.drainDeliveries()
    await waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from crm.people where id = any(${ids}::bigint[]) and first_name = ${`round ${BURST.rounds - 1}`}
        `.execute(database.db)
        return rows[0]?.n === ids.length ? true : undefined
      },
      'the last round in the mirror',
      180_000,
      100,
    )
    const burstConverged = (Date.now() - burstStart) / 1000
    const atConvergence = delta(tally(sandbox), before)
    await waitFor(
      async () => ((await queuesIdle(database.db)) ? true : undefined),
      'idle queues',
      120_000,
      200,
    )
    const burst = delta(tally(sandbox), before)
    return { idle, mixed, mixedConverged, burst, atConvergence, burstConverged }
  } finally {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
}

/** The incremental runs the schedule started, oldest first, from `afterId` on. */
async function scheduledRuns(db: Db, afterId: number) {
  const { rows } = await sql<{ id: number; created_at: Date; status: string }>`
    select id, created_at, status from sync.runs
    where requested_by = 'schedule' and mode = 'incremental' and id > ${afterId}
    order by id
  `.execute(db)
  return rows
}

/**
 * An idle engine at INCREMENTAL_SYNC_INTERVAL=10 for whole cycles: from the creation of one scheduled run
 * to the creation of the run `cycles` later. Per resource, the requests its sweeps recorded in those
 * runs (api_requests) and the requests the sandbox counted per route in that window.
 */
async function idleCost(ctx: Context) {
  const seconds = Number(ctx.options['idle-seconds'] ?? (ctx.quick ? IDLE.quickSeconds : IDLE.seconds))
  if (!Number.isFinite(seconds) || seconds < IDLE.intervalSeconds)
    throw new Error(`requests.idle-seconds: expected at least ${IDLE.intervalSeconds}`)
  const cycles = Math.ceil(seconds / IDLE.intervalSeconds)
  const sandbox = await startSandbox({ seedSize: SEED, seed: 7 })
  const database = await createBenchDatabase(ctx.server, 'requests_idle')
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    hooks: true,
    env: { HOOK_OBJECT_TYPE: 'lean', INCREMENTAL_SYNC_INTERVAL: String(IDLE.intervalSeconds), ...NO_POLLS },
  })
  try {
    await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 30_000)
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      120_000,
    )
    ctx.log(
      `idle: ${IDLE.warmupCycles} cycles of warm-up, then ${cycles} cycles at INCREMENTAL_SYNC_INTERVAL=${IDLE.intervalSeconds}`,
    )
    await sleep(IDLE.warmupCycles * IDLE.intervalSeconds * 1000)
    const latest = async () => (await scheduledRuns(database.db, 0)).at(-1)?.id ?? 0
    const nextRun = (afterId: number, timeoutMs: number) =>
      waitFor(
        async () => (await scheduledRuns(database.db, afterId))[0],
        'the next scheduled run',
        timeoutMs,
        20,
      )
    const first = await nextRun(await latest(), 3 * IDLE.intervalSeconds * 1000)
    const routesBefore = routeCounts(sandbox)
    const startedAt = performance.now()
    const runs = [first]
    while (runs.length <= cycles) {
      runs.push(await nextRun((runs.at(-1) as { id: number }).id, 3 * IDLE.intervalSeconds * 1000))
    }
    const windowSeconds = (performance.now() - startedAt) / 1000
    const routes = routeDelta(routeCounts(sandbox), routesBefore)
    const measured = runs.slice(0, cycles).map((run) => run.id)
    await waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from sync.runs where id = any(${measured}::bigint[]) and status in ('queued', 'running')
        `.execute(database.db)
        return rows[0]?.n === 0 ? true : undefined
      },
      'the measured runs to end',
      60_000,
    )
    const { rows: sweeps } = await sql<{ resource: string; sweeps: number; requests: number; pages: number }>`
      select resource, count(*)::int as sweeps, sum(api_requests)::int as requests, sum(pages)::int as pages
      from sync.run_resources where run_id = any(${measured}::bigint[])
      group by resource order by resource
    `.execute(database.db)
    const { rows: statuses } = await sql<{ status: string; n: number }>`
      select status, count(*)::int as n from sync.runs where id = any(${measured}::bigint[]) group by status
    `.execute(database.db)

    // Per resource: what the sandbox counted (by kind of route) and what the sweeps recorded.
    const perResource: Record<
      string,
      { perCycle: number; requests: number; byKind: Record<string, number>; sweeps: number; recorded: number }
    > = {}
    for (const [route, n] of Object.entries(routes)) {
      const { resource, kind } = routeKind(route)
      const entry = perResource[resource] ?? { perCycle: 0, requests: 0, byKind: {}, sweeps: 0, recorded: 0 }
      entry.requests += n
      entry.byKind[kind] = (entry.byKind[kind] ?? 0) + n
      perResource[resource] = entry
    }
    for (const sweep of sweeps) {
      const entry = perResource[sweep.resource] ?? {
        perCycle: 0,
        requests: 0,
        byKind: {},
        sweeps: 0,
        recorded: 0,
      }
      entry.sweeps = sweep.sweeps
      entry.recorded = sweep.requests
      perResource[sweep.resource] = entry
    }
    for (const entry of Object.values(perResource)) entry.perCycle = round(entry.requests / cycles, 2)
    const total = Object.values(routes).reduce((sum, n) => sum + n, 0)
    const recorded = sweeps.reduce((sum, sweep) => sum + sweep.requests, 0)
    return {
      cycles,
      intervalSeconds: IDLE.intervalSeconds,
      windowSeconds: round(windowSeconds, 1),
      runs: measured,
      runStatuses: Object.fromEntries(statuses.map((row) => [row.status, row.n])),
      requests: total,
      perMinute: round((total / windowSeconds) * 60, 1),
      recordedBySweeps: recorded,
      perResource,
      routes,
    }
  } finally {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
}

function idleFigures(idle: Awaited<ReturnType<typeof idleCost>>): Figure[] {
  const resources = Object.entries(idle.perResource).filter(([resource]) => resource !== 'other')
  const most = Math.max(...resources.map(([, entry]) => entry.perCycle))
  const breakdown = resources
    .map(
      ([resource, entry]) =>
        `${resource} ${entry.perCycle} (${Object.entries(entry.byKind)
          .map(([kind, n]) => `${n} ${kind}`)
          .join(' + ')}; sweeps recorded ${entry.recorded} in ${entry.sweeps} sweeps)`,
    )
    .join(', ')
  return [
    {
      measure: `idle: requests per minute, INCREMENTAL_SYNC_INTERVAL=${idle.intervalSeconds}, ${idle.cycles} cycles`,
      value: idle.perMinute,
      unit: '/min',
      digits: 1,
      bound: `${idle.requests} requests in ${idle.windowSeconds} s (the sweeps recorded ${idle.recordedBySweeps}); runs ${JSON.stringify(idle.runStatuses)}; another team measured ${IDLE_MEASURED_OUTSIDE.perMinute}/min from outside, in another run on another version (not a reference)`,
    },
    {
      measure: `idle: requests per resource per cycle (the most), INCREMENTAL_SYNC_INTERVAL=${idle.intervalSeconds}`,
      value: most,
      unit: '',
      digits: 2,
      reference: {
        value: round(idle.requests / idle.cycles / resources.length, 2),
        unit: '',
        label: `mean of the ${resources.length} resources`,
        digits: 2,
      },
      // What an incremental sweep of a resource that did not change needs at most: its newest page and
      // its count (a list verified by walks reads its one page instead).
      target: atMost(most, 2, '≤ 2 (the newest page and a count)'),
      bound: `${breakdown}; measured from outside by another team: crm.users ${IDLE_MEASURED_OUTSIDE.usersPerCycle}, the others ${IDLE_MEASURED_OUTSIDE.othersPerCycle} (index and count)`,
    },
  ]
}

async function run(ctx: Context) {
  const version = engineVersion()
  const figures: Figure[] = []
  const details: Record<string, unknown> = {}
  const parts = new Set((ctx.options.parts ?? 'hooks,idle').split(',').filter(Boolean))
  // One object type after the other: refreshes are coalesced by time, so a busier machine changes the count.
  for (const objectType of parts.has('hooks') ? HOOK_OBJECT_TYPES : []) {
    const result = await measure(ctx, objectType)
    details[objectType] = result
    const fetching = objectType === 'lean' || objectType === 'flat'
    const perChange = result.mixed.requests / result.mixed.changes
    const perRecord = result.burst.requests / BURST.records
    const burstChanges = BURST.rounds * BURST.records
    const perBurstChange = result.burst.requests / burstChanges
    const idleMax = Math.max(...Object.values(result.idle))
    figures.push(
      {
        measure: `${objectType}: requests per change, mixed workload (${result.mixed.changes} changes)`,
        value: perChange,
        unit: '',
        digits: 2,
        reference: fetching
          ? { value: 1, unit: '', label: 'one show per change' }
          : { value: 0, unit: '', label: 'payload applied as it is' },
        target: fetching ? undefined : atMost(perChange, 0.1, 'near 0 (≤ 0.1)'),
        bound:
          `${result.mixed.requests} requests (${result.mixed.shows} shows), converged ${round(result.mixedConverged, 1)} s after the last delivery` +
          (fetching
            ? ''
            : '; each show settles a payload of the second its row already held (whole-second timestamps)'),
      },
      {
        measure: fetching
          ? `${objectType}: requests per distinct record, burst of ${burstChanges} updates over ${BURST.records} people`
          : `${objectType}: requests per change, burst of ${burstChanges} updates over ${BURST.records} people`,
        value: fetching ? perRecord : perBurstChange,
        unit: '',
        digits: 2,
        reference: {
          value: result.atConvergence.requests / (fetching ? BURST.records : burstChanges),
          unit: '',
          label: 'counted when the last round was in the mirror',
          digits: 2,
        },
        target: fetching ? atMost(perRecord, 1, '≤ 1') : atMost(perBurstChange, 0.1, 'near 0 (≤ 0.1)'),
        bound:
          `${result.burst.requests} requests (${result.burst.shows} shows) until no refresh was left, ` +
          `${result.atConvergence.requests} when the last round was in the mirror (${round(result.burstConverged, 1)} s)` +
          (fetching
            ? '; the sandbox makes the 1,000 changes at once and delivers them one by one over seconds: a refresh waits until its record has had no delivery for REFRESH_QUIET_MS (2 s while deliveries outpace the request budget), so its one fetch comes after the last round, and the refreshes that later deliveries queued are skipped, since that fetch was sent after them'
            : '; the rounds of a record fall into the same second, and payloads of the second the row already holds cannot be ordered (whole-second timestamps), so each record is fetched once to settle which is last, after its deliveries stopped (the quiet wait of lean refreshes)'),
      },
      {
        measure: `${objectType}: requests per resource, idle incremental cycle (the most)`,
        value: idleMax,
        unit: '',
        reference: {
          value: Object.values(result.idle).reduce((sum, requests) => sum + requests, 0),
          unit: '',
          label: `all ${Object.keys(result.idle).length} resources`,
        },
        target: atMost(idleMax, 2, '≤ 2'),
        bound: Object.entries(result.idle)
          .map(([resource, requests]) => `${resource} ${requests}`)
          .join(', '),
      },
    )
  }
  if (parts.has('idle')) {
    const idle = await idleCost(ctx)
    details.idle = idle
    figures.push(...idleFigures(idle))
  }
  return {
    settings: {
      seed: SEED,
      budget: 'real: 50 requests / 10 s (engine and sandbox)',
      mixed:
        'updates 45%, tags added 15%, removed 10%, deletions 15%, creations 15%; 10 changes/s; the sandbox announces tag changes (childChangesTouchParent, its kinder variant)',
      burst: `${BURST.rounds} rounds over ${BURST.records} people, back to back`,
      engine:
        'its own process, INCREMENTAL_SYNC_INTERVAL 86400 (no run but the first and the idle one), no freshness polls (ACTIVITY_POLL_SECONDS and RESERVATION_POLL_SECONDS 0: their cost is the freshness-kinds bench)',
      engineVersion: { ...version, note: 'the working tree at the start' },
      idle: `its own engine (lean hooks) with INCREMENTAL_SYNC_INTERVAL ${IDLE.intervalSeconds} and the default budget, nothing changing; ${IDLE.warmupCycles} cycles of warm-up after the first sync, then whole cycles from the creation of one scheduled run to that of the run N cycles later (at least a minute); requests counted by the sandbox per route and recorded by the sweeps (api_requests)`,
    },
    figures,
    details,
  }
}

const OPTIONS = {
  parts:
    'hooks (the four HOOK_OBJECT_TYPEs), idle (the idle cost at INCREMENTAL_SYNC_INTERVAL=10), comma-separated (default both)',
  'idle-seconds': 'seconds of the idle measure, rounded up to whole cycles (default 120; 60 with --quick)',
}

export const requests: Scenario = { name: 'requests', title: 'Requests per change', options: OPTIONS, run }
