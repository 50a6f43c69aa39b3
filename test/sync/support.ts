// What the sweep tests share: a configuration pointed at the sandbox, sweep deps whose clients a test
// may wrap (to act between pages, or to abort), runs started with their jobs collected in memory, and
// the comparison of the mirror with the sandbox's truth.
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Sandbox } from '../../sandbox/index.ts'
import {
  type Clock,
  createUpstreamClients,
  type UpstreamClients,
  type UpstreamMetrics,
} from '../../src/api-client/index.ts'
import { type Config, parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import type { AnyResource } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import type { SweepJob } from '../../src/store/runs.ts'
import { startRun } from '../../src/sync/runs.ts'
import { type SweepDeps, verificationSettings } from '../../src/sync/sweep/deps.ts'
import { createSweepHandler } from '../../src/sync/sweep/handler.ts'

export const logger = createLogger({ level: 'silent' })

export function sandboxConfig(sandbox: Sandbox, env: Record<string, string> = {}): Config {
  const config = parseConfig({
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    RESERVATION_BASE_URL: sandbox.reservationUrl,
    RESERVATION_API_KEY: sandbox.reservationApiKey,
    CRM_RATE_LIMIT: '10000',
    RESERVATION_RATE_LIMIT: '10000',
    UPSTREAM_TIMEOUT_SECONDS: '10',
    ...env,
  })
  // Sweeps in these tests read back 5 s rather than 300: a watermark that lets little through.
  return { ...config, syncLookbackSeconds: 5 }
}

/** Time that passes only when somebody sleeps: backoffs and 429 pauses cost nothing. */
export function virtualClock(): Clock {
  let now = Date.now()
  return {
    now: () => now,
    async sleepUntil(time) {
      now = Math.max(now, time)
    },
    drivesBudget: true,
  }
}

/**
 * Clients whose index pages come without their latency: a walk then sends nothing ahead (lookahead.ts).
 * Page N is answered before page N + 1 is asked for and a walk asks for no page it does not read, on a
 * loaded machine too, where requests can take longer than the 50 ms from which a walk looks ahead.
 */
export function pagesOneAtATime(clients: UpstreamClients): UpstreamClients {
  const { crm, reservation } = clients
  return {
    ...clients,
    crm: {
      ...crm,
      async index(resource, query) {
        const { tookMs: _, ...page } = await crm.index(resource, query)
        return page
      },
    },
    reservation: reservation && {
      ...reservation,
      async index(resource, query) {
        const { tookMs: _, ...page } = await reservation.index(resource, query)
        return page
      },
    },
  }
}

/**
 * Clients that call `after(page)` once each index page of people has arrived (and wait for it), and
 * push the id of each show onto `shows`. Pages come one at a time (`pagesOneAtATime`): page N's answer
 * comes before page N + 1 is asked for, so what a test does at a page does not depend on how fast the
 * machine is.
 */
export function tappedPeople(after: (page: number) => unknown, shows: number[] = []) {
  return (wrapped: UpstreamClients): UpstreamClients => {
    const clients = pagesOneAtATime(wrapped)
    return {
      ...clients,
      crm: {
        ...clients.crm,
        async index(resource, query) {
          const page = await clients.crm.index(resource, query)
          if (resource.name === 'crm.people') await after(page.page)
          return page
        },
        async show(resource, id, options) {
          shows.push(id)
          return clients.crm.show(resource, id, options)
        },
      },
    }
  }
}

export interface DepsOptions {
  /** Changes the clients a sweep opens (e.g. to act after a page). */
  wrap?: (clients: UpstreamClients) => UpstreamClients
  /** A virtual clock with a budget of its own; the default is the system clock and the shared budget. */
  clock?: Clock
  reconcileBatchSize?: number
  /** Where the job of a sweep that waited for another one is sent; default: nowhere. */
  enqueue?: SweepDeps['enqueue']
  /** Where checks of the dependants of records found gone go; default: nowhere. */
  queueChecks?: SweepDeps['queueChecks']
}

export function sweepDeps(db: Db, config: Config, options: DepsOptions = {}): SweepDeps {
  const budgetKey = options.clock ? `test-${randomUUID()}` : undefined
  return {
    db,
    logger,
    enqueue: options.enqueue ?? (async () => {}),
    queueChecks: options.queueChecks ?? (async () => {}),
    openClients: (spent: UpstreamMetrics, signal?: AbortSignal) => {
      const clients = createUpstreamClients(config, {
        db,
        logger,
        metrics: spent,
        signal,
        clock: options.clock,
        budgetKey,
      })
      return options.wrap ? options.wrap(clients) : clients
    },
    settings: {
      lookbackSeconds: config.syncLookbackSeconds,
      maxPages: config.upstream.maxPages,
      reconcileBatchSize: options.reconcileBatchSize ?? 25,
      verification: verificationSettings(config),
      feedPollSeconds: config.activityPollSeconds,
    },
  }
}

/** Starts a run whose jobs are kept in memory, for the test to hand to the handler. */
export async function startTestRun(
  db: Db,
  request: { mode: 'incremental' | 'full'; resources?: string[] },
  jobs: SweepJob[] = [],
) {
  const result = await startRun(
    {
      db,
      reservationEnabled: true,
      enqueue: async (_trx, job) => {
        jobs.push(job)
      },
    },
    { ...request, requestedBy: 'test' },
  )
  return { result, jobs }
}

/** Starts a run and works its jobs one after the other, as one worker would. */
export async function sweep(
  deps: SweepDeps,
  request: { mode: 'incremental' | 'full'; resources: string[] },
): Promise<number> {
  const { result, jobs } = await startTestRun(deps.db, request)
  if (result.status !== 'started') throw new Error(`run refused: ${JSON.stringify(result)}`)
  const handler = createSweepHandler(deps)
  await handler(jobs.map((job, i) => ({ id: `job-${i}`, data: job, signal: new AbortController().signal })))
  return result.runId
}

export interface MirrorRow {
  id: number
  updated_at: number | null
  tags?: string[]
}

/** The live rows of a main table: id, updated_at (ms) and, for tagged resources, sorted tag names. */
export async function mirrorOf(db: Db, resource: AnyResource): Promise<MirrorRow[]> {
  const [schema, name] = resource.name.split('.') as [string, string]
  const tagTable = resource.children.find((mapping) => mapping.key === 'tags')?.child.table
  const tagged = tagTable !== undefined
  const withUpdated = 'updated_at' in resource.columns
  const result = await sql<{ id: number; updated_at: Date | null; tags: string[] | null }>`
    select m.id, ${withUpdated ? sql`m.updated_at` : sql`null`} as updated_at,
      ${
        tagged
          ? sql`(select array_agg(t.name) from ${sql.table(tagTable)} t
                 where t._parent_resource = ${resource.name} and t._parent_id = m.id)`
          : sql`null`
      } as tags
    from ${sql.table(`${schema}.${name}`)} m where m._deleted_at is null order by m.id
  `.execute(db)
  return result.rows.map((row) => ({
    id: row.id,
    updated_at: row.updated_at ? row.updated_at.getTime() : null,
    ...(tagged ? { tags: (row.tags ?? []).sort() } : {}),
  }))
}

type Truth = { id: number; updated_at?: unknown; tags?: unknown }

/** The same shape from the sandbox's records. */
export function truthOf(records: Truth[], resource: AnyResource): MirrorRow[] {
  const tagged = resource.children.some((mapping) => mapping.key === 'tags')
  return records
    .map((record) => ({
      id: record.id,
      updated_at: typeof record.updated_at === 'string' ? Date.parse(record.updated_at) : null,
      ...(tagged
        ? { tags: ((record.tags as { name: string }[] | undefined) ?? []).map((tag) => tag.name).sort() }
        : {}),
    }))
    .sort((a, b) => a.id - b.id)
}

export async function deletedIds(db: Db, resource: AnyResource): Promise<number[]> {
  const [schema, name] = resource.name.split('.') as [string, string]
  const result = await sql<{ id: number }>`
    select id from ${sql.table(`${schema}.${name}`)} where _deleted_at is not null order by id
  `.execute(db)
  return result.rows.map((row) => row.id)
}

/** The configuration with CRM pages of `perPage` asked for (500 otherwise, fixed in code). */
export function withCrmPages(config: Config, perPage: number): Config {
  return { ...config, upstream: { ...config.upstream, crm: { ...config.upstream.crm, pageSize: perPage } } }
}
