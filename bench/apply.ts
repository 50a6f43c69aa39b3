// 2. Apply throughput: records per second upserted into the mirror (people with their includes) from
// an unthrottled sandbox. The headline is a whole sweep, as the engine runs it (fetch and apply
// overlapping, each page a checkpoint), from a sandbox in a process of its own so that rendering its
// answers does not take this process's CPU; before each sweep every person is changed upstream (a later
// `updated_at`, another `background`), so that every upsert writes; their includes stay the same, so
// their child tables are left as they are (the engine compares includes under the row's lock). Then the
// parts: fetching alone, the store alone (pages in memory, each pass with a later `updated_at` than the
// last), and the store when every child row changes too (each rewritten).
// Reference: the same records written by PostgreSQL as plainly as it can (id and _raw only, no conflict
// rule, no children), in the same database.
// History (src/store/history.ts): every figure above includes it (each write of a changed person is a
// version); its cost is the store alone and the full sweep run in turn with crm.people's history
// triggers enabled and disabled, and the bytes a version takes in history.crm_people_versions.
import { Kysely, PostgresDialect, sql } from 'kysely'
import { missingNodeFlags } from '../bin/node-flags.js'
import { createUpstreamClients, createUpstreamMetrics, type RecordPage } from '../src/api-client/index.ts'
import { type Config, parseConfig } from '../src/config/index.ts'
import { createLogger } from '../src/log.ts'
import { people } from '../src/resources/index.ts'
import type { Db } from '../src/store/database.ts'
import { upsertRecords } from '../src/store/records.ts'
import { readRun, type SweepJob } from '../src/store/runs.ts'
import { startRun } from '../src/sync/runs.ts'
import { sweepDepsFrom } from '../src/sync/sweep/deps.ts'
import { createSweepHandler } from '../src/sync/sweep/handler.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { engineEnv } from './support/engines.ts'
import { historySize, withHistory } from './support/history.ts'
import { type SandboxProcess, spawnSandbox } from './support/sandbox-process.ts'
import { atLeast, type Context, type Scenario } from './support/scenario.ts'
import { backendCpuMeter, cpuMeter, round } from './support/stats.ts'

const TARGET = 20_000

/**
 * CPU used while `work` runs: this process, the sandbox's, this database's PostgreSQL backends and
 * the whole machine (busy fraction, whatever else runs on it).
 */
async function metered<T>(sandbox: SandboxProcess, database: string, work: () => Promise<T>) {
  const machine = cpuMeter()
  const node = process.cpuUsage()
  const sandboxBefore = sandbox.cpuSeconds()
  const backends = backendCpuMeter(database)
  const started = performance.now()
  const result = await work()
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(node)
  const cpu = {
    node: (used.user + used.system) / 1e6,
    sandbox: sandbox.cpuSeconds() - sandboxBefore,
    postgres: backends.read(),
  }
  return {
    result,
    seconds,
    /** CPU seconds used by this process, the sandbox process, and this database's backends. */
    cpu,
    /** Cores used on average by the same, and the busy fraction of the machine. */
    cores: {
      node: round(cpu.node / seconds, 2),
      sandbox: round(cpu.sandbox / seconds, 2),
      postgres: round(cpu.postgres / seconds, 2),
      machineBusy: round(machine.read(), 2),
    },
  }
}

const MIRROR_TABLES = [
  'crm.people',
  'crm.tags',
  'crm.addresses',
  'crm.contact_details',
  'crm.positions',
  'crm.custom_fields',
  'history.crm_people_versions',
]

/**
 * Clears the dead row versions the previous phase left, as autovacuum does between two sweeps (hours
 * apart), so that each phase starts from the same state rather than paying for the one before.
 */
async function vacuum(db: Db) {
  await sql.raw(`vacuum analyze ${MIRROR_TABLES.join(', ')}`).execute(db)
}

/**
 * The pages with each record once: a walk of the sandbox, whose order of ties is unstable as the
 * upstream's may be, can bring a record on two pages, and the passes below write distinct records.
 */
function distinct(pages: RecordPage[]): RecordPage[] {
  const seen = new Set<unknown>()
  return pages
    .map((page) => ({
      ...page,
      records: page.records.filter((record) => !seen.has(record.id) && seen.add(record.id)),
    }))
    .filter((page) => page.records.length > 0)
}

/**
 * The same pages with every `updated_at` `seconds` later: the records changed, so every upsert writes.
 * `children`: every item of every include changed too (a key added), so every child row is rewritten.
 */
function later(pages: RecordPage[], seconds: number, options: { children?: boolean } = {}): RecordPage[] {
  const changed = (record: RecordPage['records'][number]) => {
    if (!options.children) return record
    const copy: Record<string, unknown> = { ...record }
    for (const key of people.includes) {
      const items = record[key]
      if (Array.isArray(items)) copy[key] = items.map((item) => ({ ...item, bench_round: seconds }))
    }
    return copy as typeof record
  }
  return pages.map((page) => ({
    ...page,
    records: page.records.map((record) => ({
      ...changed(record),
      updated_at: new Date(Date.parse(record.updated_at ?? '') + seconds * 1000).toISOString(),
    })),
  }))
}

async function applyPages(db: Db, pages: RecordPage[]) {
  const started = performance.now()
  const node = process.cpuUsage()
  let records = 0
  let applied = 0
  for (const page of pages) {
    const result = await upsertRecords(db, people, page.records, { source: 'fetch', fetchedAt: new Date() })
    records += page.records.length
    applied += result.applied.length
  }
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(node)
  if (applied !== records) throw new Error(`only ${applied} of ${records} records were written`)
  return { records, seconds, rate: records / seconds, nodeCores: (used.user + used.system) / 1e6 / seconds }
}

/** Pages applied two at a time on two connections: what the second core could add. */
async function applyPairs(db: Db, pages: RecordPage[]) {
  const started = performance.now()
  let records = 0
  for (let i = 0; i < pages.length; i += 2) {
    const pair = pages.slice(i, i + 2)
    await Promise.all(
      pair.map((page) => upsertRecords(db, people, page.records, { source: 'fetch', fetchedAt: new Date() })),
    )
    records += pair.reduce((sum, page) => sum + page.records.length, 0)
  }
  return records / ((performance.now() - started) / 1000)
}

/** EXPLAIN ANALYZE of one page's statements (rolled back): where PostgreSQL spends its time. */
async function explainPage(database: BenchDatabase, page: RecordPage) {
  const statements: { sql: string; parameters: readonly unknown[] }[] = []
  const logged = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: database.pool }),
    log: (event) => {
      if (!/^\s*(begin|commit|rollback)\b/i.test(event.query.sql)) statements.push(event.query)
    },
  })
  // Written once to log its statements, and rolled back: the statements explained below then meet
  // the mirror as the write met it (children to replace are still to be replaced).
  const rollback = new Error('rolled back')
  await logged
    .transaction()
    .execute(async (trx) => {
      await upsertRecords(trx as unknown as Db, people, page.records, {
        source: 'fetch',
        fetchedAt: new Date(),
      })
      throw rollback
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error
    })
  if (statements.length === 0) throw new Error('no statement was logged')
  const client = await database.pool.connect()
  try {
    await client.query('begin')
    const plan: string[] = []
    for (const statement of statements) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `explain (analyze, timing) ${statement.sql}`,
        statement.parameters as unknown[],
      )
      plan.push(...rows.map((row) => row['QUERY PLAN']))
    }
    await client.query('rollback')
    const total = (pattern: RegExp) =>
      plan
        .filter((text) => pattern.test(text))
        .reduce((sum, line) => sum + Number(/actual time=[\d.]+\.\.([\d.]+)/.exec(line)?.[1] ?? 0), 0)
    const sum = (pattern: RegExp) =>
      plan.reduce((acc, line) => acc + Number(pattern.exec(line)?.[1] ?? 0), 0) || Number.NaN
    return {
      statements: statements.length,
      executionMs: sum(/Execution Time: ([\d.]+)/),
      planningMs: sum(/Planning Time: ([\d.]+)/),
      parentsMs: total(/-> {2}Insert on people t /),
      childrenDeletedMs: total(/-> {2}Delete on /),
      childrenInsertedMs: total(/-> {2}Insert on (?!people t )/),
    }
  } finally {
    client.release()
  }
}

async function plainInserts(db: Db, pages: RecordPage[]) {
  await sql`create schema bench_reference`.execute(db)
  await sql`create table bench_reference.people (id bigint primary key, _raw jsonb)`.execute(db)
  const started = performance.now()
  let records = 0
  for (const page of pages) {
    const rows = JSON.stringify(page.records.map((record) => ({ id: record.id, _raw: record })))
    await sql`
      insert into bench_reference.people (id, _raw)
      select id, _raw from json_to_recordset(${rows}::json) as x(id bigint, _raw jsonb)
    `.execute(db)
    records += page.records.length
  }
  return records / ((performance.now() - started) / 1000)
}

/** jsonb orders an object's keys by length, then bytes: the order it sorts each object's keys into. */
const jsonbKeyOrder = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0)

function keysInJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(keysInJsonbOrder)
  if (typeof value !== 'object' || value === null) return value
  const object = value as Record<string, unknown>
  return Object.fromEntries(
    Object.keys(object)
      .sort(jsonbKeyOrder)
      .map((key) => [key, keysInJsonbOrder(object[key])]),
  )
}

/**
 * What PostgreSQL spends reading a page's records as jsonb, nothing written: milliseconds per page of
 * the records' JSON sent and read as jsonb, less the same text sent and read as text (the transport);
 * and the same with every object's keys already in jsonb's order (jsonb sorts each object's keys).
 */
async function jsonbInput(database: BenchDatabase, pages: RecordPage[]) {
  const texts = pages.map((page) => JSON.stringify(page.records))
  const sortStarted = performance.now()
  const sorted = pages.map((page) => JSON.stringify(keysInJsonbOrder(page.records)))
  const sortMs = (performance.now() - sortStarted) / pages.length
  const client = await database.pool.connect()
  try {
    const perPage = async (statement: string, params: string[]) => {
      const started = performance.now()
      for (const param of params) await client.query(statement, [param])
      return (performance.now() - started) / params.length
    }
    const jsonb = 'select count(*) from jsonb_array_elements($1::jsonb)'
    const text = 'select length($1::text)'
    // Twice, the lower of each: the first pass warms the connection and the server's caches.
    const best = async (statement: string, params: string[]) =>
      Math.min(await perPage(statement, params), await perPage(statement, params))
    const transport = await best(text, texts)
    return {
      jsonbMs: (await best(jsonb, texts)) - transport,
      jsonbKeysInOrderMs: (await best(jsonb, sorted)) - transport,
      transportMs: transport,
      /** This process sorting the keys (and serializing), per page. */
      sortMs,
      kibPerPage: texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) / pages.length / 1024,
    }
  } finally {
    client.release()
  }
}

/** A full sweep of people with the engine's sweep handler in this process, on `connections` connections. */
async function sweepPeople(db: Db, config: Config, connections: number) {
  const logger = createLogger({ level: 'warn', pretty: false })
  const jobs: SweepJob[] = []
  const started = performance.now()
  const result = await startRun(
    { db, reservationEnabled: false, enqueue: async (_trx, job) => void jobs.push(job) },
    { mode: 'full', resources: [people.name], requestedBy: 'bench' },
  )
  if (result.status !== 'started') throw new Error(`run refused: ${JSON.stringify(result)}`)
  const deps = sweepDepsFrom(config, {
    db,
    logger,
    metrics: createUpstreamMetrics(),
    enqueue: async () => {},
    queueChecks: async () => {},
  })
  const handler = createSweepHandler({
    ...deps,
    settings: { ...deps.settings, applyConnections: connections },
  })
  const signal = new AbortController().signal
  await handler(jobs.map((job, i) => ({ id: `bench-${i}`, data: job, signal })))
  const seconds = (performance.now() - started) / 1000
  const run = await readRun(db, result.runId)
  if (run?.status !== 'succeeded') throw new Error(`run ${result.runId} ended ${run?.status}: ${run?.error}`)
  const sweep = run.resources[0]
  return { seconds, records: sweep?.records ?? 0, requests: sweep?.api_requests ?? 0 }
}

async function run(ctx: Context) {
  const count = ctx.quick ? 3_000 : 20_000
  const sandbox = await spawnSandbox(
    { seedSize: { people: count }, behaviour: { crmRateLimit: null } },
    ctx.nodeOptions,
  )
  const database = await createBenchDatabase(ctx.server, 'apply')
  try {
    const config = parseConfig(
      engineEnv(sandbox.ready, 3000, { databaseUrl: database.url, env: { CRM_RATE_LIMIT: '10000' } }),
    )
    const logger = createLogger({ level: 'warn', pretty: false })
    const { crm } = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    ctx.log(`fetching ${count} people with includes (the sandbox in its own process)`)
    const fetched = await metered(sandbox, database.name, async () => {
      const pages: RecordPage[] = []
      for await (const page of crm.pages(people)) pages.push(page)
      return pages
    })
    const pages = distinct(fetched.result)
    const fetchRate = count / fetched.seconds

    ctx.log('store alone: empty mirror, then the same people with a later updated_at (children unchanged)')
    const first = await applyPages(database.db, pages)
    await vacuum(database.db)
    const replaced = await applyPages(database.db, later(pages, 1))
    const childRows = await sql<{ table: string; rows: number }>`
      select 'tags' as table, count(*)::int as rows from crm.tags
      union all select 'addresses', count(*)::int from crm.addresses
      union all select 'contact_details', count(*)::int from crm.contact_details
      union all select 'positions', count(*)::int from crm.positions
      union all select 'custom_fields', count(*)::int from crm.custom_fields
    `.execute(database.db)
    const children = childRows.rows.reduce((sum, row) => sum + row.rows, 0)
    const reference = await plainInserts(database.db, pages)
    const input = await jsonbInput(database, pages)
    await vacuum(database.db)
    const pairs = await applyPairs(database.db, later(pages, 2))
    await vacuum(database.db)
    const page = pages[1] ?? (pages[0] as RecordPage)
    const plan = await explainPage(database, later([page], 3)[0] as RecordPage)
    ctx.log('store alone: the same people with every child changed too (every child row rewritten)')
    const rewritten = await applyPages(database.db, later(pages, 4, { children: true }))
    const childrenPlan = await explainPage(database, later([page], 5, { children: true })[0] as RecordPage)
    // Back to the children the sandbox has, for the sweeps.
    await applyPages(database.db, later(pages, 6))
    await vacuum(database.db)
    const pageMs = (replaced.seconds * 1000) / pages.length

    // History's cost to the store: the same passes with and without it, in turn, the best of each; each
    // pass of changed people (a version each) is followed by the same pages again (a full resync of
    // unchanged records: engine columns only, no version).
    const HISTORY_EACH = ctx.quick ? 1 : 5
    const store = { with: 0, without: 0, rewriteWith: 0, rewriteWithout: 0 }
    for (let attempt = 0; attempt < HISTORY_EACH; attempt++) {
      for (const enabled of [true, false]) {
        ctx.log(`store alone, ${enabled ? 'with' : 'without'} history (${attempt + 1} of ${HISTORY_EACH})`)
        const changed = later(pages, 10 + attempt * 2 + (enabled ? 0 : 1))
        await vacuum(database.db)
        const pass = await withHistory(database.db, enabled, () => applyPages(database.db, changed))
        await vacuum(database.db)
        const rewrite = await withHistory(database.db, enabled, () => applyPages(database.db, changed))
        if (enabled) {
          store.with = Math.max(store.with, pass.rate)
          store.rewriteWith = Math.max(store.rewriteWith, rewrite.rate)
        } else {
          store.without = Math.max(store.without, pass.rate)
          store.rewriteWithout = Math.max(store.rewriteWithout, rewrite.rate)
        }
      }
    }

    // Every person changes upstream before each sweep, so that each of its upserts writes.
    const sweeps: Record<
      number,
      Awaited<ReturnType<typeof metered<Awaited<ReturnType<typeof sweepPeople>>>>>
    > = {}
    // Three sweeps of each: the machine's other load comes and goes, and the fastest of three is the
    // one it disturbed least.
    const SWEEPS_EACH = ctx.quick ? 1 : 3
    const sweepOnce = async (connections: number) => {
      const round = await sandbox.touch('people')
      await vacuum(database.db)
      const sweep = await metered(sandbox, database.name, () => sweepPeople(database.db, config, connections))
      const written = await sql<{ rows: number }>`
        select count(*)::int as rows from crm.people where background = ${`touched ${round}`}
      `.execute(database.db)
      if (written.rows[0]?.rows !== count) {
        throw new Error(`the sweep wrote ${written.rows[0]?.rows} of ${count} people`)
      }
      return sweep
    }
    for (const connections of [1, 2]) {
      for (let attempt = 1; attempt <= SWEEPS_EACH; attempt++) {
        ctx.log(
          `every person changed upstream, then a full sweep (pages applied on ${connections} connection(s), ${attempt} of ${SWEEPS_EACH})`,
        )
        const sweep = await sweepOnce(connections)
        if (sweep.seconds < (sweeps[connections]?.seconds ?? Infinity)) sweeps[connections] = sweep
      }
    }
    const best = (sweeps[2]?.seconds ?? Infinity) < (sweeps[1]?.seconds ?? Infinity) ? 2 : 1
    const swept = sweeps[best] as NonNullable<(typeof sweeps)[number]>
    // History's cost to the sweep: sweeps on as many connections with and without it, in turn.
    const historySweeps = { with: Infinity, without: Infinity }
    for (let attempt = 1; attempt <= HISTORY_EACH; attempt++) {
      for (const enabled of [false, true]) {
        ctx.log(`a full sweep ${enabled ? 'with' : 'without'} history (${attempt} of ${HISTORY_EACH})`)
        const sweep = await withHistory(database.db, enabled, () => sweepOnce(best))
        const key = enabled ? 'with' : 'without'
        historySweeps[key] = Math.min(historySweeps[key], sweep.seconds)
      }
    }
    const historyRate = { with: count / historySweeps.with, without: count / historySweeps.without }
    const size = await historySize(database.db)
    /** CPU milliseconds per page of the sweep. */
    const perPage = (seconds: number) => round((seconds * 1000) / pages.length)
    const sweepRate = swept.result.records / swept.seconds
    const rates = Object.fromEntries(
      Object.entries(sweeps).map(([connections, sweep]) => [
        connections,
        sweep.result.records / sweep.seconds,
      ]),
    )

    return {
      settings: {
        people: count,
        pageSize: pages[0]?.records.length,
        includes: people.includes.join(','),
        sandbox: 'its own process, no rate limit; every person updated before each sweep',
        vacuum:
          'vacuum analyze of the mirror tables before each measured phase (as autovacuum between sweeps)',
        sweep: `full, crm.people only, the engine's sweep handler in this process (${missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS).length === 0 ? 'with the V8 flags `crm-sync start` runs with' : "on Node's defaults; `crm-sync start` adds the V8 flags of bin/node-flags.js, whose cost the memory scenario shows"}), applyConnections ${best}, the fastest of ${SWEEPS_EACH} sweeps of each`,
      },
      figures: [
        {
          measure:
            'records upserted per second from the unthrottled sandbox (full sweep: fetch + apply; every person changed, its includes not)',
          value: sweepRate,
          unit: '/s',
          reference: { value: replaced.rate, unit: '/s', label: 'the store alone, one page at a time' },
          target: atLeast(sweepRate, TARGET, '≥ 20,000/s'),
          bound:
            `${count} people, ${swept.result.requests} requests in ${round(swept.seconds, 1)} s (the fastest of ${SWEEPS_EACH}); the next page is fetched ` +
            `while this one is applied, pages applied on ${best} connection(s) ` +
            `(${Object.entries(rates)
              .map(([connections, rate]) => `${connections}: ${round(rate)}/s`)
              .join(
                ', ',
              )}). CPU bounds it, on 2 cores: per page of ${pages[0]?.records.length}, PostgreSQL's backends ` +
            `used ${perPage(swept.cpu.postgres)} ms (reading the records as jsonb alone takes ${round(input.jsonbMs)} ms of a core, measured apart), this process ${perPage(swept.cpu.node)} ms (parsing and checking the ` +
            `pages, building the statements), the sandbox ${perPage(swept.cpu.sandbox)} ms (rendering them); the ` +
            `machine was ${Math.round(swept.cores.machineBusy * 100)}% busy. Fetching alone reaches ${round(fetchRate)}/s, ` +
            `the store alone ${round(replaced.rate)}/s one page at a time and ${round(pairs)}/s two at a time`,
        },
        {
          measure:
            'records fetched per second from the sandbox alone (pages parsed and checked, nothing applied)',
          value: fetchRate,
          unit: '/s',
        },
        {
          measure: 'records upserted per second, children unchanged (store, pages in memory, one at a time)',
          value: replaced.rate,
          unit: '/s',
          reference: {
            value: reference,
            unit: '/s',
            label: 'PostgreSQL plain insert of id and _raw of the same records',
          },
          bound:
            `PostgreSQL, one page at a time: a page of ${pages[0]?.records.length} people is ${plan.statements} statement(s) in ${round(pageMs)} ms, ` +
            `${round(plan.executionMs)} ms of it executing (EXPLAIN ANALYZE: ${round(plan.parentsMs)} ms writing the parents); ` +
            `their includes are those of the rows they replace, so no child table is touched; the rest is sending and ` +
            `parsing the parameters (reading the records as jsonb alone takes ${round(input.jsonbMs)} ms, measured apart), and this process ` +
            `building them (${round(replaced.nodeCores, 2)} cores)`,
        },
        {
          measure: "PostgreSQL reading a page's records as jsonb, nothing written (one backend)",
          value: input.jsonbMs,
          unit: 'ms',
          reference: {
            value: input.jsonbKeysInOrderMs,
            unit: 'ms',
            label: "the same records with every object's keys already in jsonb's order",
          },
          bound:
            `${pages[0]?.records.length} people, ${round(input.kibPerPage)} KiB of JSON a page: the time to send them as jsonb ` +
            `less the time to send them as text (${round(input.transportMs, 1)} ms). jsonb sorts every object's keys ` +
            `(by length, then bytes), an order the upstream's records do not come in; sorting them in this process ` +
            `first took it ${round(input.sortMs, 1)} ms a page (serializing included), more than it saves PostgreSQL, so the engine ` +
            `sends them as they come`,
        },
        {
          measure:
            'records upserted per second, every child row changed too (store, pages in memory, one at a time)',
          value: rewritten.rate,
          unit: '/s',
          bound:
            `a page is ${childrenPlan.statements} statements in ${round((rewritten.seconds * 1000) / pages.length)} ms, ` +
            `${round(childrenPlan.executionMs)} ms of it executing (EXPLAIN ANALYZE: ${round(childrenPlan.parentsMs)} ms writing ` +
            `the parents, ${round(childrenPlan.childrenDeletedMs)} ms deleting and ${round(childrenPlan.childrenInsertedMs)} ms ` +
            `comparing and inserting ${round(children / pages.length)} child rows)`,
        },
        {
          measure: 'records upserted per second, two pages at a time on two connections (store)',
          value: pairs,
          unit: '/s',
        },
        {
          measure: 'records inserted per second into an empty mirror (store)',
          value: first.rate,
          unit: '/s',
        },
        {
          measure:
            'history: records upserted per second from the unthrottled sandbox with history (full sweep, every person changed: one version each)',
          value: historyRate.with,
          unit: '/s',
          reference: { value: historyRate.without, unit: '/s', label: 'the same sweep without history' },
          target: atLeast(historyRate.with, 0.75 * historyRate.without, 'history costs ≤ 25%'),
          bound:
            `the fastest of the sweeps on ${best} connection(s) with crm.people's history triggers enabled ` +
            `and disabled, ${HISTORY_EACH} of each in turn: history costs ` +
            `${Math.round((1 - historyRate.with / historyRate.without) * 100)}%. A version is one more row written ` +
            '(the record, its typed columns and _raw) by one statement-level trigger per statement, after one ' +
            "look in the versions' index for the record's latest; the version before is left as it is (the view " +
            'derives its end)',
        },
        {
          measure:
            'history: records upserted per second with history (store, pages in memory, one at a time)',
          value: store.with,
          unit: '/s',
          reference: { value: store.without, unit: '/s', label: 'the same without history' },
          target: atLeast(store.with, 0.75 * store.without, 'history costs ≤ 25%'),
          bound:
            `the fastest of ${HISTORY_EACH} passes each, in turn: history costs ` +
            `${Math.round((1 - store.with / store.without) * 100)}% of the store alone, where PostgreSQL's writes are all ` +
            "there is (a full sweep shares the machine's cores with fetching and parsing)",
        },
        {
          measure:
            'history: records rewritten per second with history, unchanged (store, pages in memory: a full resync, no version)',
          value: store.rewriteWith,
          unit: '/s',
          reference: { value: store.rewriteWithout, unit: '/s', label: 'the same without history' },
          bound:
            `the same pages applied again after each pass above: engine columns change only, so the triggers ` +
            `compare each row with the one it replaced and write nothing (history costs ` +
            `${Math.round((1 - store.rewriteWith / store.rewriteWithout) * 100)}%)`,
        },
        {
          measure: 'history: bytes per version (history.crm_people_versions: heap, TOAST, indexes)',
          value: size.bytesPerVersion,
          unit: 'B',
          reference: { value: size.mirrorBytesPerRow, unit: 'B', label: 'crm.people, per row' },
          bound:
            `${size.versions} versions of ${size.mirrorRows} people (${size.versionsPerRecord} each) in ` +
            `${round(size.bytes / 2 ** 20)} MiB after a vacuum; a version holds the typed columns, _raw (the person ` +
            'with its includes) and the engine columns of the write that made it',
        },
      ],
      details: {
        fetch: { seconds: round(fetched.seconds, 2), cores: fetched.cores },
        first,
        replaced,
        rewritten,
        childrenPlan,
        reference: round(reference),
        jsonbInput: Object.fromEntries(Object.entries(input).map(([key, value]) => [key, round(value, 1)])),
        pairs: round(pairs),
        plan,
        childRows: childRows.rows,
        history: {
          store: Object.fromEntries(Object.entries(store).map(([key, rate]) => [key, round(rate)])),
          sweepSeconds: { with: round(historySweeps.with, 2), without: round(historySweeps.without, 2) },
          size,
        },
        sweeps: Object.fromEntries(
          Object.entries(sweeps).map(([connections, sweep]) => [
            connections,
            {
              seconds: round(sweep.seconds, 2),
              rate: round(sweep.result.records / sweep.seconds),
              records: sweep.result.records,
              requests: sweep.result.requests,
              cores: sweep.cores,
            },
          ]),
        ),
      },
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

export const apply: Scenario = { name: 'apply', title: 'Apply throughput', run }
