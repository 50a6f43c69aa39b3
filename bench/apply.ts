// 2. Apply throughput: records per second upserted into the mirror (people with their includes, children
// replaced), from pages fetched off an unthrottled sandbox. The store alone (pages already in memory),
// then a whole sweep from the same sandbox (fetch and apply, page after page, as the engine does).
// Reference: the same records written by PostgreSQL as plainly as it can (id and _raw only, no conflict
// rule, no children), in the same database.
import { Kysely, PostgresDialect, sql } from 'kysely'
import { createUpstreamClients, createUpstreamMetrics, type RecordPage } from '../src/api-client/index.ts'
import { parseConfig } from '../src/config/index.ts'
import { createLogger } from '../src/log.ts'
import { people } from '../src/resources/index.ts'
import { startSandbox } from '../src/sandbox/index.ts'
import type { Db } from '../src/store/database.ts'
import { upsertRecords } from '../src/store/records.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { engineEnv } from './support/engines.ts'
import { atLeast, type Context, type Scenario } from './support/scenario.ts'
import { cpuMeter, round } from './support/stats.ts'
import { sweepHere } from './support/sweeps.ts'

const TARGET = 20_000

async function applyPages(db: Db, pages: RecordPage[]) {
  const cpu = cpuMeter()
  const node = process.cpuUsage()
  const started = performance.now()
  let records = 0
  for (const page of pages) {
    await upsertRecords(db, people, page.records, { source: 'fetch', fetchedAt: new Date() })
    records += page.records.length
  }
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(node)
  return {
    records,
    seconds,
    rate: records / seconds,
    nodeCores: (used.user + used.system) / 1e6 / seconds,
    machineBusy: cpu.read(),
  }
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

/** EXPLAIN ANALYZE of one page's statement (rolled back): where PostgreSQL spends its time. */
async function explainPage(database: BenchDatabase, page: RecordPage) {
  let statement: { sql: string; parameters: readonly unknown[] } | undefined
  const logged = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: database.pool }),
    log: (event) => {
      statement = event.query
    },
  })
  await upsertRecords(logged as unknown as Db, people, page.records, {
    source: 'fetch',
    fetchedAt: new Date(),
  })
  if (!statement) throw new Error('no statement was logged')
  const client = await database.pool.connect()
  try {
    await client.query('begin')
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, timing) ${statement.sql}`,
      statement.parameters as unknown[],
    )
    await client.query('rollback')
    const plan = rows.map((row) => row['QUERY PLAN'])
    const ms = (pattern: RegExp) => {
      const line = plan.find((text) => pattern.test(text)) ?? ''
      return Number(/actual time=[\d.]+\.\.([\d.]+)/.exec(line)?.[1] ?? Number.NaN)
    }
    const execution = Number(/Execution Time: ([\d.]+)/.exec(plan.join('\n'))?.[1] ?? Number.NaN)
    return {
      executionMs: execution,
      planningMs: Number(/Planning Time: ([\d.]+)/.exec(plan.join('\n'))?.[1] ?? Number.NaN),
      parentsDecodedMs: ms(/Function Scan on json_to_recordset x /),
      parentsWrittenMs: ms(/Insert on people t /),
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

async function run(ctx: Context) {
  const count = ctx.quick ? 3_000 : 20_000
  const sandbox = await startSandbox({ seedSize: { people: count }, behaviour: { crmRateLimit: null } })
  const database = await createBenchDatabase(ctx.server, 'apply')
  try {
    const config = parseConfig(
      engineEnv(sandbox, 3000, { databaseUrl: database.url, env: { CRM_RATE_LIMIT: '10000' } }),
    )
    const logger = createLogger({ level: 'warn', pretty: false })
    const { crm } = createUpstreamClients(config, {
      db: database.db,
      logger,
      metrics: createUpstreamMetrics(),
    })
    ctx.log(`fetching ${count} people with includes`)
    const pages: RecordPage[] = []
    for await (const page of crm.pages(people)) pages.push(page)

    ctx.log('applying: empty mirror, then the same records again (children replaced)')
    const first = await applyPages(database.db, pages)
    const replaced = await applyPages(database.db, pages)
    const childRows = await sql<{ table: string; rows: number }>`
      select 'tags' as table, count(*)::int as rows from crm.tags
      union all select 'addresses', count(*)::int from crm.addresses
      union all select 'contact_details', count(*)::int from crm.contact_details
      union all select 'positions', count(*)::int from crm.positions
      union all select 'custom_fields', count(*)::int from crm.custom_fields
    `.execute(database.db)
    const reference = await plainInserts(database.db, pages)
    const pairs = await applyPairs(database.db, pages)
    const plan = await explainPage(database, pages[1] ?? (pages[0] as RecordPage))
    const pageMs = (replaced.seconds * 1000) / pages.length

    ctx.log('a full sweep of the same people from the unthrottled sandbox')
    const swept = await sweepHere(database.db, config, { mode: 'full', resources: [people.name] })
    const sweptRecords = swept.run.resources[0]?.records ?? 0
    const sweepRate = sweptRecords / swept.seconds
    const applyShare = replaced.seconds / swept.seconds

    return {
      settings: {
        people: count,
        pageSize: pages[0]?.records.length,
        includes: people.includes.join(','),
        sandbox: 'in this process, no rate limit',
      },
      figures: [
        {
          measure: 'records upserted per second, children replaced (store, pages in memory)',
          value: replaced.rate,
          unit: '/s',
          reference: {
            value: reference,
            unit: '/s',
            label: 'PostgreSQL plain insert of id and _raw of the same records',
          },
          target: atLeast(replaced.rate, TARGET, '≥ 20,000/s'),
          bound:
            `PostgreSQL, one page at a time: a page of ${pages[0]?.records.length} people is one statement of ${round(pageMs)} ms, ` +
            `${round(plan.executionMs)} ms of it executing (EXPLAIN ANALYZE: ${round(plan.parentsWrittenMs)} ms for the parents, ` +
            `${round(plan.parentsDecodedMs)} of them decoding their JSON recordset, the rest of the statement deleting and ` +
            `inserting ${round(childRows.rows.reduce((sum, row) => sum + row.rows, 0) / pages.length)} child rows); Node used only ` +
            `${round(replaced.nodeCores, 2)} cores, the machine was ${Math.round(replaced.machineBusy * 100)}% busy: one backend ` +
            `on one core. Two pages at a time reach ${round(pairs)}/s`,
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
          measure: 'records per second of a full sweep from the unthrottled sandbox (fetch + apply)',
          value: sweepRate,
          unit: '/s',
          reference: { value: replaced.rate, unit: '/s', label: 'the store alone' },
          target: atLeast(sweepRate, TARGET, '≥ 20,000/s'),
          bound:
            `a sweep fetches and applies its pages one after the other (offset pages, newest first, each page a checkpoint): ` +
            `applying is ${Math.round(applyShare * 100)}% of its time, the rest is the request, the sandbox rendering ` +
            `${pages[0]?.records.length} people with includes in this same process, and parsing them`,
        },
      ],
      details: {
        first,
        replaced,
        reference: round(reference),
        pairs: round(pairs),
        plan,
        childRows: childRows.rows,
        sweep: {
          seconds: round(swept.seconds, 2),
          records: sweptRecords,
          requests: swept.run.resources[0]?.api_requests,
        },
      },
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

export const apply: Scenario = { name: 'apply', title: 'Apply throughput', run }
