// Opt-in: several accounts in one deployment (ACCOUNTS_FILE, docs/accounts.md) as users have them. N
// accounts (option `accounts`, default 20; --quick 3), each its own sandbox at the demo's size (option
// `records`, default 300 of every resource as bench/details.ts seeds them; --quick 30), each sandbox in
// a process of its own (bench/support/account-sandbox.ts) with its own keys under the real budget (50
// requests / 10 s per key, in the sandbox and in the engine) and an upstream answering in 100-600 ms. The
// engine as `npm start` runs it (spawnEngine: its own process, defaults but what is named), with the
// accounts file and PUBLIC_URL, so that every account's hooks are registered at its own path.
// Three deployments, in this order, each with new sandboxes and a new database:
// - one account, one engine: the reference of every figure;
// - N accounts, one engine: the first complete mirror (from the engine's start until every account's
//   first run has ended, each account then compared with its sandbox), the engine's connections during
//   it (pg_stat_activity, every second), the time until every account has its hooks (waited for), an
//   idle minute after that (the process tree's CPU, no change upstream), then freshness: one person changed per account through the sandbox's control (which
//   sends the webhook), 5 rounds, each change timed until its row holds it in the account's
//   crm_<name>.people (every account polled every 50 ms); the tree's peak RSS over the whole life;
// - N accounts, two engines on one database: the first complete mirror and the connections per engine.
// First runs not ended 20 times the one account's time after the start (at least 10 minutes) are
// reported as such, and that engine is measured no further.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import type { SeedCount } from '../sandbox/index.ts'
import { freePort } from '../src/database/free-port.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS } from '../src/resources/index.ts'
import { accountSchemas, forAccount, qualifiedIn } from '../src/store/account-schemas.ts'
import type { Db } from '../src/store/database.ts'
import { type AccountSandbox, type MirrorComparison, spawnAccountSandbox } from './support/account-sandbox.ts'
import { type ConnectionSampler, sampleConnections } from './support/connections.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { engineVersion } from './support/engine-metrics.ts'
import { type EngineProcess, spawnEngine, type Upstream } from './support/engines.ts'
import { processTree, sampleTree, type TreeSampler } from './support/process-tree.ts'
import { atMost, type Context, type Figure, type Scenario, type Target } from './support/scenario.ts'
import { cpuMeter, percentile, processCpuSeconds, round, sleep } from './support/stats.ts'

const BUDGET = { requests: 50, windowSeconds: 10 }
const LATENCY = { latencyMs: 100, latencyMaxMs: 600 }
const ROUNDS = 5
const POLL_MS = 50
/** How long a change may take to reach its row before it counts as not seen. */
const CHANGE_TIMEOUT_MS = 60_000
const FRESHNESS_TARGET_S = 2
const RSS_TARGET_MB = 1024
/** The pool's 10 and pg-boss's 6, per engine process (as docs/accounts.md counts them). */
const CONNECTIONS_TARGET = 16
/** Comparisons of a mirror with its sandbox at once. */
const COMPARING = 4
/** The hooks crm-sync registers for an account that mirrors every resource: each webhook model and event. */
const HOOKS_WANTED = WEBHOOK_MODELS.length * WEBHOOK_EVENTS.length

/** ACCOUNTS_FILE replaces the variables of the one account: left empty, they count as unset. */
const NO_UPSTREAM: Upstream = { crmUrl: '', crmApiKey: '', reservationUrl: '', reservationApiKey: '' }

const seedSize = (records: number): SeedCount => ({
  people: records,
  companies: records,
  deals: records,
  projects: records,
  tasks: records,
  protocols: records,
  contacts: records,
  bookings: records,
})

const accountName = (index: number) => `a${String(index + 1).padStart(2, '0')}`
const variable = (name: string, what: string) => `${name.toUpperCase()}_${what}`

interface Account {
  name: string
  sandbox: AccountSandbox
  /** The bench's connections, in the account's schemas. */
  db: Db
}

/** The accounts file: keys and webhook secrets by environment variable, each account's budget its own. */
function accountsFile(accounts: readonly Account[]): string {
  return `accounts:\n${accounts
    .map(
      ({ name, sandbox }) => `  ${name}:
    crm: { base_url: ${sandbox.ready.crmUrl}, api_key_env: ${variable(name, 'CRM_KEY')}, rate_limit: ${BUDGET.requests} }
    reservation: { base_url: ${sandbox.ready.reservationUrl}, api_key_env: ${variable(name, 'RES_KEY')}, rate_limit: ${BUDGET.requests} }
    webhook_secret_env: ${variable(name, 'WEBHOOK_SECRET')}
`,
    )
    .join('')}`
}

function accountsEnv(accounts: readonly Account[]): Record<string, string> {
  return Object.fromEntries(
    accounts.flatMap(({ name, sandbox }) => [
      [variable(name, 'CRM_KEY'), sandbox.ready.crmApiKey],
      [variable(name, 'RES_KEY'), sandbox.ready.reservationApiKey],
      [variable(name, 'WEBHOOK_SECRET'), `${name}-webhook-secret-0123456789`],
    ]),
  )
}

/** CPU seconds (user + system) the processes of the tree under `root` have used so far. */
function treeCpuSeconds(root: number): number {
  return processTree(root)
    .map(processCpuSeconds)
    .filter(Number.isFinite)
    .reduce((sum, seconds) => sum + seconds, 0)
}

async function inBatches<T, R>(
  items: readonly T[],
  size: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = []
  for (let i = 0; i < items.length; i += size)
    results.push(...(await Promise.all(items.slice(i, i + size).map(work))))
  return results
}

interface FirstRun {
  account: string
  /** From the engine's start to the end of the account's first run; NaN: not ended by the timeout. */
  seconds: number
  /** From the engine's start to the start of that run (its migrations and the process's start before). */
  startedAfter: number
  /** The run's, or `not ended` when it had not by the timeout. */
  status: string
  error: string | null
}

/** Waits until every account's first run has ended, or `timeoutMs` has passed (the rest: `not ended`). */
async function firstRuns(accounts: readonly Account[], started: number, timeoutMs: number) {
  const ended = new Map<string, FirstRun>()
  const deadline = Date.now() + timeoutMs
  while (ended.size < accounts.length) {
    for (const { name, db } of accounts) {
      if (ended.has(name)) continue
      // Before the engine has migrated the account's schemas, there is no table to read yet.
      const run = await db
        .selectFrom('sync.runs')
        .select(['status', 'started_at', 'finished_at', 'error'])
        .orderBy('id')
        .limit(1)
        .executeTakeFirst()
        .catch(() => undefined)
      if (run?.finished_at)
        ended.set(name, {
          account: name,
          seconds: (run.finished_at.getTime() - started) / 1000,
          startedAfter: ((run.started_at ?? run.finished_at).getTime() - started) / 1000,
          status: run.status,
          error: run.error,
        })
    }
    if (ended.size === accounts.length || Date.now() > deadline) break
    await sleep(250)
  }
  return accounts.map(
    ({ name }) =>
      ended.get(name) ?? {
        account: name,
        seconds: Number.NaN,
        startedAfter: Number.NaN,
        status: 'not ended',
        error: `not ended ${round(timeoutMs / 1000)} s after the engine's start`,
      },
  )
}

/** Watches every account's hooks from the engine's start: when each has all of its own, at its own path. */
function watchHooks(accounts: readonly Account[], publicUrl: string, started: number) {
  const registered = new Map<string, number>()
  let stopped = false
  const done = (async () => {
    while (!stopped && registered.size < accounts.length) {
      for (const { name, sandbox } of accounts) {
        if (registered.has(name)) continue
        const hooks = await sandbox.hooks().catch(() => [])
        const prefix = `${publicUrl}/accounts/${name}/webhooks/crm/`
        if (hooks.filter((hook) => hook.target_url.startsWith(prefix)).length >= HOOKS_WANTED)
          registered.set(name, (Date.now() - started) / 1000)
      }
      if (registered.size < accounts.length) await sleep(500)
    }
  })()
  return {
    registered,
    /** Waits until every account has its hooks, or `timeoutMs` has passed; watches no more. */
    async settle(timeoutMs: number) {
      await Promise.race([done, sleep(timeoutMs)])
      stopped = true
      await done
    },
  }
}

/**
 * One person changed per account in each round, at once; each change timed from just before it is
 * made until a poll (every POLL_MS, one statement over every account still waiting) sees its row hold it.
 */
async function freshness(database: BenchDatabase, accounts: readonly Account[]) {
  const ids = await Promise.all(accounts.map(({ sandbox }) => sandbox.liveIds('people')))
  const latencies: number[] = []
  const missed: string[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    const pending = new Map<string, { id: number; value: string; at: number }>()
    await Promise.all(
      accounts.map(async ({ name, sandbox }, i) => {
        const live = ids[i] as number[]
        const id = live[(round - 1) % live.length] as number
        const value = `fresh ${round} ${name}`
        const at = Date.now()
        await sandbox.update('people', id, { first_name: value })
        pending.set(name, { id, value, at })
      }),
    )
    const deadline = Date.now() + CHANGE_TIMEOUT_MS
    while (pending.size > 0 && Date.now() < deadline) {
      const reads = [...pending].map(
        ([name, change]) => sql<{ account: string }>`
          select ${name}::text as account from ${sql.table(qualifiedIn(accountSchemas(name), 'crm.people'))}
          where id = ${change.id} and first_name = ${change.value}`,
      )
      const { rows } = await sql<{ account: string }>`${sql.join(reads, sql` union all `)}`.execute(
        database.db,
      )
      const now = Date.now()
      for (const { account } of rows) {
        const change = pending.get(account)
        if (!change) continue
        latencies.push((now - change.at) / 1000)
        pending.delete(account)
      }
      if (pending.size > 0) await sleep(POLL_MS)
    }
    for (const [name, change] of pending) missed.push(`${name}: person ${change.id} in round ${round}`)
    await sleep(1000)
  }
  return {
    changes: latencies.length + missed.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: percentile(latencies, 100),
    missed,
  }
}

interface DeploymentOptions {
  label: string
  accounts: number
  records: number
  replicas: number
  /** The idle minute and the freshness rounds after the first sync. */
  after: boolean
  /** How long every account's first run is waited for. */
  timeoutMs: number
}

/** Sandboxes, a database and engines for `options.accounts` accounts; the measurements; then all stopped. */
async function deployment(ctx: Context, options: DeploymentOptions) {
  const { replicas } = options
  const names = Array.from({ length: options.accounts }, (_, i) => accountName(i))
  const sandboxes: AccountSandbox[] = []
  const engines: EngineProcess[] = []
  const trees: TreeSampler[] = []
  let database: BenchDatabase | undefined
  let folder: string | undefined
  let connections: ConnectionSampler | undefined
  try {
    ctx.log(`${options.label}: ${names.length} sandbox process(es)`)
    const spawned = await Promise.allSettled(
      names.map((_, i) =>
        spawnAccountSandbox({
          seed: i + 1,
          seedSize: seedSize(options.records),
          crmApiKey: `${accountName(i)}-crm-key-0001`,
          reservationApiKey: `${accountName(i)}-res-key-0001`,
          behaviour: { crmRateLimit: BUDGET, reservationRateLimit: BUDGET },
          faults: { crm: LATENCY, reservation: LATENCY },
        }),
      ),
    )
    for (const result of spawned) if (result.status === 'fulfilled') sandboxes.push(result.value)
    const failed = spawned.find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
    const bench = await createBenchDatabase(ctx.server, `accounts_${options.label}`)
    database = bench
    const accounts: Account[] = names.map((name, i) => ({
      name,
      sandbox: sandboxes[i] as AccountSandbox,
      db: forAccount(bench.db, accountSchemas(name)),
    }))
    folder = await mkdtemp(join(tmpdir(), 'crm-sync-bench-accounts-'))
    const file = join(folder, 'accounts.yaml')
    await writeFile(file, accountsFile(accounts))
    // Every replica registers the hooks at the first one's address (there is no load balancer here).
    const port = await freePort()
    const publicUrl = `http://127.0.0.1:${port}`
    const env = {
      ...accountsEnv(accounts),
      ACCOUNTS_FILE: file,
      PUBLIC_URL: publicUrl,
      WEBHOOK_SECRET: '',
    }
    const sampler = sampleConnections(bench.db, bench.name, () => engines.map((engine) => engine.pid))
    connections = sampler
    ctx.log(`${options.label}: ${replicas} engine(s), first sync of ${names.length} account(s)`)
    const started = Date.now()
    const machine = cpuMeter()
    const sandboxCpuAtStart = sandboxes.reduce((sum, sandbox) => sum + treeCpuSeconds(sandbox.pid), 0)
    const watching = watchHooks(accounts, publicUrl, started)
    const starting = await Promise.allSettled(
      Array.from({ length: replicas }, (_, i) =>
        spawnEngine(NO_UPSTREAM, {
          databaseUrl: bench.url,
          nodeOptions: ctx.nodeOptions,
          env: i === 0 ? { ...env, PORT: String(port) } : env,
        }).then((engine) => {
          engines.push(engine)
          trees.push(sampleTree(engine.pid, 500))
          return engine
        }),
      ),
    )
    const refused = starting.find((result) => result.status === 'rejected')
    if (refused) throw refused.reason
    const cpuAtStart = engines.map((engine) => treeCpuSeconds(engine.pid))
    const runs = await firstRuns(accounts, started, options.timeoutMs)
    const machineBusy = machine.read()
    const sandboxCpu =
      sandboxes.reduce((sum, sandbox) => sum + treeCpuSeconds(sandbox.pid), 0) - sandboxCpuAtStart
    await sampler.stop()
    const unfinished = runs.filter((run) => Number.isNaN(run.seconds)).length
    // Not ended by the timeout: the time waited, a lower bound.
    const firstMirror =
      unfinished > 0 ? (Date.now() - started) / 1000 : Math.max(...runs.map((run) => run.seconds))
    const firstSyncCpu = engines.map((engine, i) => treeCpuSeconds(engine.pid) - (cpuAtStart[i] ?? 0))
    ctx.log(
      unfinished > 0
        ? `${options.label}: ${unfinished} first run(s) not ended after ${round(firstMirror)} s; comparing`
        : `${options.label}: first complete mirror in ${round(firstMirror, 1)} s; comparing`,
    )
    const compared = await inBatches(accounts, COMPARING, async ({ name, sandbox }) => ({
      account: name,
      ...(await sandbox.compare(bench.url, name)),
    }))
    // An engine that has not mirrored every account is measured no further.
    const further = unfinished === 0
    ctx.log(`${options.label}: waiting for every account's hooks`)
    await watching.settle(further ? (ctx.quick ? 5 : 30) * 60_000 : 0)
    const hooksRegistered = names.map((name) => watching.registered.get(name) ?? Number.NaN)
    const hooks = await Promise.all(
      accounts.map(async ({ name, sandbox }) => {
        const registered = await sandbox.hooks()
        const own = registered.filter((hook) =>
          hook.target_url.startsWith(`${publicUrl}/accounts/${name}/webhooks/crm/`),
        ).length
        return { account: name, registered: registered.length, own }
      }),
    )
    let idle: { seconds: number; cpuSeconds: number; perAccountPerMinute: number } | null = null
    let fresh: Awaited<ReturnType<typeof freshness>> | null = null
    if (options.after && further) {
      const seconds = ctx.quick ? 20 : 60
      ctx.log(`${options.label}: ${seconds} s idle`)
      const before = engines.map((engine) => treeCpuSeconds(engine.pid))
      await sleep(seconds * 1000)
      const cpuSeconds = engines.reduce(
        (sum, engine, i) => sum + treeCpuSeconds(engine.pid) - (before[i] ?? 0),
        0,
      )
      idle = { seconds, cpuSeconds, perAccountPerMinute: cpuSeconds / names.length / (seconds / 60) }
      ctx.log(`${options.label}: freshness, ${ROUNDS} rounds of one change per account`)
      fresh = await freshness(bench, accounts)
    }
    const counters = await Promise.all(accounts.map(({ sandbox }) => sandbox.counters()))
    const throttled = counters.reduce(
      (sum, counter) => sum + (counter.crm.statuses['429'] ?? 0) + (counter.reservation.statuses['429'] ?? 0),
      0,
    )
    const requests = counters.reduce(
      (sum, counter) => sum + counter.crm.requests + counter.reservation.requests,
      0,
    )
    for (const tree of trees) tree.stop()
    // The tree's RSS as sampled, or the engine's own peak (VmHWM) where that is larger (between samples).
    const peakRss = engines.map((engine, i) => Math.max(trees[i]?.peak().rss ?? 0, engine.peakRss()))
    const peakConnections = sampler.peak()
    return {
      label: options.label,
      accounts: names.length,
      replicas,
      firstMirror,
      unfinished,
      runs,
      compared,
      differing: compared.reduce((sum, comparison: MirrorComparison) => sum + comparison.differing, 0),
      hooks,
      /** Seconds from the engine's start until each account had all its hooks (NaN: not by the timeout). */
      hooksRegistered: hooksRegistered.map((seconds) => round(seconds, 1)),
      allHooksRegistered: Math.max(...hooksRegistered),
      connections: {
        // With one engine every connection of the engine's names is its own, attributed or not.
        mostPerEngine: replicas === 1 ? peakConnections.total : Math.max(...peakConnections.perEngine, 0),
        ...peakConnections,
      },
      firstSyncCpu: firstSyncCpu.map((seconds) => round(seconds, 1)),
      /** From the engines' start to the last first run's end: the machine's CPU and the sandboxes'. */
      machineBusy: round(machineBusy, 2),
      sandboxCpu: round(sandboxCpu, 1),
      /** When the first runs started, from the engines' start (after each account's migrations). */
      runsStartedAfter: {
        first: round(Math.min(...runs.map((run) => run.startedAfter)), 1),
        last: round(Math.max(...runs.map((run) => run.startedAfter)), 1),
      },
      idle,
      freshness: fresh,
      peakRssMb: Math.max(...peakRss) / 2 ** 20,
      peakRssMbPerEngine: peakRss.map((bytes) => round(bytes / 2 ** 20)),
      requests,
      throttled,
    }
  } finally {
    await connections?.stop()
    for (const tree of trees) tree.stop()
    await Promise.all(engines.map((engine) => engine.stop()))
    await Promise.all(sandboxes.map((sandbox) => sandbox.stop()))
    await database?.drop()
    if (folder) await rm(folder, { recursive: true, force: true })
  }
}

type Deployment = Awaited<ReturnType<typeof deployment>>

/** What went wrong in a deployment: runs not succeeded, hooks missing, mirrors differing, throttling. */
function problemsOf(result: Deployment): string[] {
  const at = `${result.label}:`
  return [
    ...result.runs
      .filter((run) => run.status !== 'succeeded')
      .map((run) => `${at} the first run of ${run.account} ended ${run.status}: ${run.error}`),
    ...result.hooks
      .filter((hook) => hook.own !== HOOKS_WANTED || hook.own !== hook.registered)
      .map(
        (hook) =>
          `${at} ${hook.account} has ${hook.registered} hook(s), ${hook.own} at its own path of the engine's address (${HOOKS_WANTED} wanted)`,
      ),
    ...result.compared
      .filter((comparison) => comparison.differing > 0)
      .map(
        (comparison) =>
          `${at} ${comparison.account} differs from its sandbox in ${comparison.differing} record(s): ${comparison.differences.join('; ')}`,
      ),
    ...(result.freshness?.missed ?? []).map((change) => `${at} change not seen within 60 s: ${change}`),
    ...(result.throttled > 0 ? [`${at} ${result.throttled} answers 429 from the sandboxes`] : []),
  ]
}

/** value < goal; a value not measured (NaN) misses. */
const below = (value: number, goal: number, text: string): Target =>
  Number.isNaN(value)
    ? { text, pass: false, by: 'not measured' }
    : { ...atMost(value, goal, text), pass: value < goal }

const count = (value: string | undefined, fallback: number, what: string) => {
  const parsed = Number(value ?? fallback)
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new Error(`accounts.${what}: expected a whole number, got ${value}`)
  return parsed
}

async function run(ctx: Context) {
  const n = count(ctx.options.accounts, ctx.quick ? 3 : 20, 'accounts')
  const records = count(ctx.options.records, ctx.quick ? 30 : 300, 'records')
  ctx.log(`reference: one account, one engine (${records} records of every resource)`)
  const one = await deployment(ctx, {
    label: 'one_account',
    accounts: 1,
    records,
    replicas: 1,
    after: true,
    timeoutMs: (ctx.quick ? 10 : 60) * 60_000,
  })
  // N accounts are waited for 20 times the one account's time, at least 10 minutes.
  const timeoutMs = Math.max(10 * 60_000, 20 * one.firstMirror * 1000)
  ctx.log(`${n} accounts, one engine`)
  const many = await deployment(ctx, {
    label: 'one_engine',
    accounts: n,
    records,
    replicas: 1,
    after: true,
    timeoutMs,
  })
  ctx.log(`${n} accounts, two engines on one database`)
  const two = await deployment(ctx, {
    label: 'two_engines',
    accounts: n,
    records,
    replicas: 2,
    after: false,
    timeoutMs,
  })
  const notEnded = (result: Deployment) =>
    result.unfinished > 0 ? ` (${result.unfinished} not ended when waited for no longer)` : ''
  const problems = [one, many, two].flatMap(problemsOf)
  const fresh = many.freshness
  const oneFresh = one.freshness
  const idle = many.idle
  const oneIdle = one.idle
  const failedRuns = [one, many, two].reduce(
    (sum, result) => sum + result.runs.filter((r) => r.status !== 'succeeded').length,
    0,
  )
  const figures: Figure[] = [
    {
      measure: `first complete mirror of ${n} accounts, one engine${notEnded(many)}`,
      value: many.firstMirror,
      unit: 's',
      digits: 1,
      reference: { value: one.firstMirror, unit: 's', label: 'one account, one engine', digits: 1 },
      target: atMost(many.firstMirror, 2 * one.firstMirror, '≤ 2 × one account'),
      bound: `keys are independent (every account has its own keys and its own budget of ${BUDGET.requests} requests / ${BUDGET.windowSeconds} s), so the bound is the one-account time, ${round(one.firstMirror, 1)} s; every account's hooks were registered ${round(many.allHooksRegistered, 1)} s after the start (one account: ${round(one.allHooksRegistered, 1)} s); the engine used ${many.firstSyncCpu.join(' + ')} s of CPU for it (one account: ${one.firstSyncCpu.join(' + ')} s), the sandboxes ${many.sandboxCpu} s (${one.sandboxCpu} s); the machine was ${Math.round(many.machineBusy * 100)}% busy (${Math.round(one.machineBusy * 100)}%); the first runs started ${many.runsStartedAfter.first}-${many.runsStartedAfter.last} s after the start (one account: ${one.runsStartedAfter.first} s), after the accounts' migrations`,
    },
    {
      measure: `first complete mirror of ${n} accounts, two engines on one database${notEnded(two)}`,
      value: two.firstMirror,
      unit: 's',
      digits: 1,
      reference: { value: many.firstMirror, unit: 's', label: 'one engine', digits: 1 },
      target: atMost(two.firstMirror, many.firstMirror * 1.1, '≤ one engine × 1.1'),
      bound: `the budgets, which both engines share; CPU of each engine during it: ${two.firstSyncCpu.join(' s, ')} s`,
    },
    {
      measure: `every account's hooks registered, from the engine's start, ${n} accounts, one engine`,
      value: many.allHooksRegistered,
      unit: 's',
      digits: 1,
      reference: { value: one.allHooksRegistered, unit: 's', label: 'one account', digits: 1 },
      bound: `recorded (no target); ${HOOKS_WANTED} hooks an account; per account (s): ${many.hooksRegistered.join(', ')}; two engines: ${two.hooksRegistered.join(', ')}`,
    },
    {
      measure: `freshness p50, one person changed per account, ${ROUNDS} rounds (${fresh?.changes ?? 0} changes)`,
      value: fresh?.p50 ?? Number.NaN,
      unit: 's',
      digits: 2,
      reference: { value: oneFresh?.p50 ?? Number.NaN, unit: 's', label: 'one account', digits: 2 },
    },
    {
      measure: `freshness p99 (max ${round(fresh?.max ?? Number.NaN, 2)} s)`,
      value: fresh?.p99 ?? Number.NaN,
      unit: 's',
      digits: 2,
      reference: { value: oneFresh?.p99 ?? Number.NaN, unit: 's', label: 'one account', digits: 2 },
      target: below(fresh?.p99 ?? Number.NaN, FRESHNESS_TARGET_S, `< ${FRESHNESS_TARGET_S} s`),
      bound: `a change's refresh (a show of the person) waits for its account's budget, shared with the details pass (DETAILS_BUDGET_PERCENT's default 10%), the activity feed and the reservation polls; ${fresh?.missed.length ?? 0} change(s) not seen within ${CHANGE_TIMEOUT_MS / 1000} s`,
    },
    {
      measure: `CPU seconds per account per minute, engine's process tree, idle after the first sync (${idle?.seconds ?? 0} s)`,
      value: idle?.perAccountPerMinute ?? Number.NaN,
      unit: 's',
      digits: 2,
      reference: {
        value: oneIdle?.perAccountPerMinute ?? Number.NaN,
        unit: 's',
        label: 'one account',
        digits: 2,
      },
      bound: `recorded (no target); ${round(idle?.cpuSeconds ?? Number.NaN, 1)} CPU seconds in all: the activity feed and reservation polls, incremental runs and the details pass of every account`,
    },
    {
      measure: `peak RSS of the engine's process tree, ${n} accounts`,
      value: many.peakRssMb,
      unit: 'MB',
      reference: { value: one.peakRssMb, unit: 'MB', label: 'one account' },
      target: atMost(many.peakRssMb, RSS_TARGET_MB, '≤ 1 GB (set for 20 accounts)'),
    },
    {
      measure: `database connections of the engine, most at once during the first sync, ${n} accounts`,
      value: many.connections.mostPerEngine,
      unit: '',
      reference: { value: one.connections.mostPerEngine, unit: '', label: 'one account' },
      target: atMost(
        many.connections.mostPerEngine,
        CONNECTIONS_TARGET,
        `≤ ${CONNECTIONS_TARGET} per replica`,
      ),
      bound: `the pool's 10 and pg-boss's 6, shared by every account; by application_name, most at once: ${Object.entries(
        many.connections.byName,
      )
        .map(([name, most]) => `${name} ${most}`)
        .join(', ')} (pg-boss's LISTEN connection, useListenNotify, is one more than its pool of 6)`,
    },
    {
      measure: `database connections per engine, two engines, most at once during the first sync (${two.connections.total} of both)`,
      value: two.connections.mostPerEngine,
      unit: '',
      reference: { value: many.connections.mostPerEngine, unit: '', label: 'one engine' },
      target: atMost(
        two.connections.mostPerEngine,
        CONNECTIONS_TARGET,
        `≤ ${CONNECTIONS_TARGET} per replica`,
      ),
    },
    {
      measure:
        'records differing from the sandboxes after the first sync, every account of the three deployments',
      value: one.differing + many.differing + two.differing,
      unit: '',
      target: atMost(one.differing + many.differing + two.differing, 0, '0'),
    },
    {
      measure: 'first runs that did not succeed',
      value: failedRuns,
      unit: '',
      target: atMost(failedRuns, 0, '0'),
    },
  ]
  return {
    settings: {
      accounts: n,
      records: `${records} of every resource (people, companies, deals, projects, tasks, protocols, contacts, bookings), each account seeded differently`,
      budget: `${BUDGET.requests} requests / ${BUDGET.windowSeconds} s per key, in each sandbox and in the engine (rate_limit in the accounts file); every account has its own keys`,
      latency: `${LATENCY.latencyMs}-${LATENCY.latencyMaxMs} ms every upstream call`,
      sandboxes: 'each in a process of its own (bench/support/account-sandbox.ts)',
      engine:
        "npm start's process (spawnEngine), defaults (DETAILS_BUDGET_PERCENT 10, INCREMENTAL_SYNC_INTERVAL 300) but LOG_LEVEL warn and a yearly full run; ACCOUNTS_FILE in a temporary folder, keys and webhook secrets by environment variable; PUBLIC_URL set, hooks registered per account",
      reference: 'the same engine with an accounts file of one account, measured first',
      replicas:
        "one engine, then two engine processes started together on one database; both register the hooks at the first one's address (no load balancer; no change is made during that run)",
      firstMirror: "from the engine's start until every account's first run has ended (its finished_at)",
      hooks: `every account's own hooks (${HOOKS_WANTED}) at its path of PUBLIC_URL, as its sandbox shows them, polled every 0.5 s from the engine's start; waited for before the idle minute and freshness`,
      freshness: `${ROUNDS} rounds, one person per account changed at once (first_name, control.crm.update, which sends the webhook), each timed until its row holds it in crm_<name>.people; every account polled every ${POLL_MS} ms, one statement for all; one engine`,
      idle: `${ctx.quick ? 20 : 60} s after the first sync, the comparison and every account's hooks registered, no change upstream; CPU of the engine's process tree from /proc`,
      connections:
        "pg_stat_activity of the bench database every second during the first sync, application_name crm-sync and crm-sync:jobs, told apart per engine by the client port's socket (/proc)",
    },
    figures,
    details: {
      engine: engineVersion(),
      problems,
      deployments: [one, many, two].map((result) => ({
        ...result,
        firstMirror: round(result.firstMirror, 1),
        peakRssMb: round(result.peakRssMb),
        runs: result.runs.map((r) => ({ ...r, seconds: round(r.seconds, 1) })),
        freshness: result.freshness && {
          ...result.freshness,
          p50: round(result.freshness.p50, 3),
          p99: round(result.freshness.p99, 3),
          max: round(result.freshness.max, 3),
        },
        idle: result.idle && {
          ...result.idle,
          cpuSeconds: round(result.idle.cpuSeconds, 2),
          perAccountPerMinute: round(result.idle.perAccountPerMinute, 3),
        },
      })),
    },
  }
}

export const accounts: Scenario = {
  name: 'accounts',
  title: 'Several accounts in one deployment',
  optIn: true,
  run,
  options: {
    accounts: 'accounts in the deployment (default 20; --quick 3)',
    records: 'records of every resource in each account (default 300; --quick 30)',
  },
}
