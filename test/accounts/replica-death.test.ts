// Replicas share every account's work through pg-boss (docs/accounts.md): a replica's death loses
// nothing, and its accounts' sweeps resume elsewhere (issue 29). Two accounts, north and south, seeded
// alike (their records share ids), with pages of 5 and every API call slowed, so that a first sync
// walks for many seconds. Replica A is `crm-sync start` in a process of its own, alone at first, its
// URL the PUBLIC_URL its hooks are registered at; once it walks a sweep of each account, replica B
// starts in this process on the same database with the same ACCOUNTS_FILE. Each account's users then
// make changes that A acknowledges into the account's inbox; A is killed with SIGKILL while it still
// holds sweeps of both accounts (active pg-boss jobs it took before B existed).
//
// Asserts: the sweeps A held are taken up again (retried after A's heartbeats stop, by B, the only
// replica left) and complete; every account's first run succeeds; both services of every account
// converge; every delivery A acknowledged ends applied and its change is in the account's mirror;
// nothing of one account shows in the other's schemas, nor in the code's own.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createLogger } from '../../src/log.ts'
import { WEBHOOK_EVENTS, WEBHOOK_MODELS } from '../../src/resources/index.ts'
import { type Running, start } from '../../src/service.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import type { Db } from '../../src/store/database.ts'
import { removeWorkdirs, workdir } from '../cli/run.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { type CliProcess, readyStatus, runCli, waitFor } from '../support/process.ts'
import { runEnded } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const NAMES = ['north', 'south'] as const
type Name = (typeof NAMES)[number]

/** The sandbox's largest page, and the latency of every API call while A walks. */
const PAGE = 5
const LATENCY_MS = 150
/** People and contacts take many pages each (a sweep of each service walks for seconds); the rest few. */
const SEED = {
  people: 500,
  contacts: 300,
  companies: 12,
  deals: 8,
  projects: 8,
  tasks: 8,
  bookings: 8,
} as const

/** Hooks crm-sync registers in each account: one per model and event. */
const HOOKS = WEBHOOK_MODELS.length * WEBHOOK_EVENTS.length

const variable = (name: string, what: string) => `${name.toUpperCase()}_${what}`
const tail = (output: string) => output.trimEnd().split('\n').slice(-20).join('\n')

const sandboxes = {} as Record<Name, Sandbox>
const dbs = {} as Record<Name, Db>
let database: TestDatabase
let replicaA: CliProcess | undefined
let replicaB: Running | undefined
let aUrl: string
let env: Record<string, string>

/** Kills replica A's whole process group (the launcher and the Node it runs), once. */
async function killA(): Promise<void> {
  const run = replicaA
  if (!run) return
  if (run.child.exitCode === null && run.child.signalCode === null) {
    try {
      process.kill(-(run.child.pid as number), 'SIGKILL')
    } catch {}
  }
  await run.exited
}

beforeAll(async () => {
  for (const name of NAMES) {
    sandboxes[name] = await startSandbox({
      seed: 1,
      seedSize: SEED,
      crmApiKey: `${name}-crm-key-0001`,
      reservationApiKey: `${name}-res-key-0001`,
      behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: PAGE },
      faults: { crm: { latencyMs: LATENCY_MS }, reservation: { latencyMs: LATENCY_MS } },
    })
  }
  database = await createTestDatabase()
  for (const name of NAMES) dbs[name] = forAccount(database.db, accountSchemas(name))

  const cwd = await workdir()
  const file = join(cwd, 'accounts.yaml')
  await writeFile(
    file,
    `accounts:\n${NAMES.map(
      (name) => `  ${name}:
    crm: { base_url: ${sandboxes[name].crmUrl}, api_key_env: ${variable(name, 'CRM_KEY')}, rate_limit: 1000 }
    reservation: { base_url: ${sandboxes[name].reservationUrl}, api_key_env: ${variable(name, 'RES_KEY')}, rate_limit: 1000 }
    webhook_secret_env: ${variable(name, 'WEBHOOK_SECRET')}
`,
    ).join('')}`,
  )
  const port = await freePort()
  aUrl = `http://127.0.0.1:${port}`
  // Both replicas behind one PUBLIC_URL, as behind a balancer: here it is A's, so that every
  // delivery of either account is A's to acknowledge.
  env = {
    ACCOUNTS_FILE: file,
    DATABASE_URL: database.url,
    HOST: '127.0.0.1',
    PUBLIC_URL: aUrl,
    DETAILS_BUDGET_PERCENT: '0',
    LOG_LEVEL: 'warn',
    ...Object.fromEntries(
      NAMES.flatMap((name) => [
        [variable(name, 'CRM_KEY'), sandboxes[name].crmApiKey],
        [variable(name, 'RES_KEY'), sandboxes[name].reservationApiKey],
        [variable(name, 'WEBHOOK_SECRET'), `${name}-webhook-secret-0123456789`],
      ]),
    ),
  }
  // In a process group of its own, so that SIGKILL takes it whole.
  replicaA = runCli(['start'], { env: { ...env, PORT: String(port) }, cwd, group: true })
  const run = replicaA
  await waitFor(
    async () => {
      if (run.child.exitCode !== null) throw new Error(`replica A exited:\n${tail(run.output())}`)
      return readyStatus(port).catch(() => undefined)
    },
    60_000,
    'replica A ready',
  )
}, 90_000)

afterAll(async () => {
  await killA()
  await replicaB?.stop({ deadline: Date.now() + 10_000 })
  for (const sandbox of Object.values<Sandbox>(sandboxes)) await sandbox.stop()
  if (database) await dropTestDatabase(database)
  await removeWorkdirs()
})

/** The database's clock: pg-boss's times are its. */
const now = async () =>
  (await sql<{ now: Date }>`select now() as now`.execute(database.db)).rows[0]?.now as Date

interface HeldSweep {
  job: string
  resource: string
  pages: number
}

/**
 * Sweeps of the account's first run that are walking (running, a page saved) under an active job
 * that was taken before `before`: while only A ran, so A holds them.
 */
async function sweepsHeldBefore(name: Name, before: Date): Promise<HeldSweep[]> {
  const { rows } = await sql<HeldSweep>`
    select j.id::text as job, rr.resource, rr.pages
    from sync.run_resources rr
    join pgboss.job j on j.name = ${`${name}/resource-sweep`} and j.state = 'active'
      and j.data->>'resource' = rr.resource and (j.data->>'runId')::int = rr.run_id
    where rr.run_id = 1 and rr.status = 'running' and rr.pages > 0 and j.started_on < ${before}
    order by rr.resource`.execute(dbs[name])
  return rows
}

type Table = 'people' | 'companies'

/** A record's mirrored name and whether it is deleted, in one account's table. */
const rowOf = async (db: Db, table: Table, id: number) =>
  (
    await sql<{ name: string | null; deleted: boolean }>`
      select name, _deleted_at is not null as deleted from ${sql.table(`crm.${table}`)}
      where id = ${id}`.execute(db)
  ).rows[0]

/** Versions of a record in one account's history named `name`. */
const versionsNamed = async (db: Db, table: Table, id: number, name: string) =>
  (
    await sql<{ n: number }>`
      select count(*)::int as n from ${sql.table(`history.crm_${table}`)}
      where id = ${id} and name = ${name}`.execute(db)
  ).rows[0]?.n

interface Changes {
  renamed: [Table, number, string][]
  destroyed: number
  created: number
}

describe('a replica killed while it holds every account’s work', () => {
  it('loses nothing: its sweeps resume on the other replica, its deliveries are applied', async () => {
    const run = replicaA as CliProcess
    const aliveA = () => {
      if (run.child.exitCode !== null || run.child.signalCode !== null)
        throw new Error(`replica A exited:\n${tail(run.output())}`)
    }
    // A registers each account's hooks at its own URL, and walks a sweep of each account.
    await waitFor(
      async () => {
        aliveA()
        for (const name of NAMES) {
          const hooks = sandboxes[name].control.crm.hooks()
          expect(hooks.length, name).toBe(HOOKS)
          for (const hook of hooks)
            expect(hook.target_url, name).toContain(`${aUrl}/accounts/${name}/webhooks/crm/`)
        }
        return true
      },
      30_000,
      'every account’s hooks at A',
    )
    // Only A runs: every active job is A's.
    await waitFor(
      async () => {
        aliveA()
        for (const name of NAMES)
          expect(
            (await sweepsHeldBefore(name, await now())).map((sweep) => sweep.resource),
            `${name}'s sweeps walking`,
          ).toContain('crm.people')
        return true
      },
      30_000,
      'A walking the people of each account',
    )

    // B: this process, the same database and accounts file, started while A walks.
    const bStartedAt = await now()
    const port = await freePort()
    const config = parseConfig({
      ...env,
      PORT: String(port),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    })
    replicaB = await start(config, createLogger({ level: config.logLevel, pretty: false }))

    // Each account's users change records (ids the accounts share): the CRM delivers to A.
    const shared = (table: Table) => {
      const south = new Set(sandboxes.south.control.crm.liveIds(table))
      return sandboxes.north.control.crm.liveIds(table).filter((id) => south.has(id))
    }
    const [p1, p2, p3, p4] = shared('people') as [number, number, number, number]
    const [c1] = shared('companies') as [number]
    expect(p4).toBeDefined()
    const changes: Record<Name, Changes> = {
      north: {
        renamed: [
          ['people', p1, 'north renamed while A held its sweeps'],
          ['companies', c1, 'north company renamed'],
        ],
        destroyed: p2,
        created: 0,
      },
      south: {
        renamed: [
          ['people', p3, 'south renamed while A held its sweeps'],
          ['companies', c1, 'south company renamed'],
        ],
        destroyed: p4,
        created: 0,
      },
    }
    const succeededBefore = Object.fromEntries(
      NAMES.map((name) => [name, sandboxes[name].control.counters().deliveries.succeeded]),
    ) as Record<Name, number>
    for (const name of NAMES) {
      const crm = sandboxes[name].control.crm
      for (const [table, id, value] of changes[name].renamed) crm.update(table, id, { name: value })
      crm.destroy('people', changes[name].destroyed)
      changes[name].created = crm.create('people', { name: `${name} created while A held its sweeps` }).id
    }
    // Every delivery acknowledged by A (4 an account), each in its account's inbox.
    for (const name of NAMES) await sandboxes[name].control.drainDeliveries()
    const acknowledged = {} as Record<Name, { id: number; status: string }[]>
    for (const name of NAMES) {
      const counts = sandboxes[name].control.counters().deliveries
      expect(counts.succeeded - succeededBefore[name], `${name}'s deliveries acknowledged`).toBe(4)
      acknowledged[name] = (
        await sql<{ id: number; status: string }>`
          select id, status from sync.inbox order by id`.execute(dbs[name])
      ).rows
      expect(acknowledged[name], `${name}'s inbox`).toHaveLength(4)
    }

    // A still holds a walking sweep of each account, taken before B started: the kill lands on them.
    const held = {} as Record<Name, HeldSweep[]>
    for (const name of NAMES) {
      held[name] = await sweepsHeldBefore(name, bStartedAt)
      expect(
        held[name].map((sweep) => sweep.resource),
        `${name}: sweeps A held at the kill`,
      ).toContain('crm.people')
    }
    aliveA()
    const openAtKill = await sql<{ inbox: number; refreshes: number }>`
      select
        (select count(*)::int from sync_north.inbox where status = 'accepted')
          + (select count(*)::int from sync_south.inbox where status = 'accepted') as inbox,
        (select count(*)::int from pgboss.job where name like '%/record-refresh'
          and state in ('created', 'retry', 'active')) as refreshes`.execute(database.db)
    await killA()
    expect(run.child.signalCode).toBe('SIGKILL')
    const killedAt = await now()
    // A is gone: what it held and did not finish is still active under its dead heartbeat.
    const orphans = {} as Record<Name, string[]>
    for (const name of NAMES) {
      const ids = held[name].map((sweep) => sweep.job)
      const { rows } = await sql<{ id: string }>`
        select id::text as id from pgboss.job
        where id = any(${ids}::uuid[]) and state = 'active'`.execute(database.db)
      orphans[name] = rows.map((row) => row.id)
      expect(orphans[name], `${name}: sweeps A held when it died`).not.toEqual([])
    }
    // The rest of the walk needs no patience.
    for (const name of NAMES)
      sandboxes[name].control.setFaults({ crm: { latencyMs: 0 }, reservation: { latencyMs: 0 } })

    // Every account's first run ends, and succeeds: its orphaned sweeps were taken up by B, the only
    // replica left, after A's heartbeats stopped.
    for (const name of NAMES) {
      const first = await runEnded(dbs[name], 1, 60_000)
      expect(first.status, `${name}'s first run`).toBe('succeeded')
      const orphaned = () =>
        sql<{ resource: string; state: string; retries: number; after_kill: boolean }>`
          select data->>'resource' as resource, state::text as state, retry_count as retries,
            started_on > ${killedAt} as after_kill
          from pgboss.job where id = any(${orphans[name]}::uuid[]) order by 1`.execute(database.db)
      // The run ends when its last sweep's work does; pg-boss marks that job completed just after.
      await waitFor(
        async () => ((await orphaned()).rows.every((row) => row.state !== 'active') ? true : undefined),
        30_000,
        `${name}: the sweeps A held to end`,
      )
      const { rows } = await orphaned()
      expect(rows, name).toHaveLength(orphans[name].length)
      for (const row of rows)
        expect(row, `${name}: the sweep of ${row.resource} A held`).toMatchObject({
          state: 'completed',
          retries: expect.any(Number),
          after_kill: true,
        })
      for (const row of rows) expect(row.retries, `${name} ${row.resource}`).toBeGreaterThan(0)
      const { rows: sweeps } = await sql<{ resource: string; status: string }>`
        select resource, status from sync.run_resources where run_id = 1 and status <> 'succeeded'`.execute(
        dbs[name],
      )
      expect(sweeps, `${name}: sweeps of the first run that did not succeed`).toEqual([])
    }

    // Both services of every account converge.
    for (const name of NAMES)
      await waitFor(
        async () => {
          expect(await differences(dbs[name], sandboxes[name], { reservation: true }), name).toEqual([])
          return true
        },
        30_000,
        `${name} converged`,
      )

    // Every delivery A acknowledged was applied, and its change is in its account's mirror.
    for (const name of NAMES) {
      await waitFor(
        async () => {
          const { rows } = await sql<{ id: number; status: string }>`
            select id, status from sync.inbox where id = any(${acknowledged[name].map((row) => row.id)})
            order by id`.execute(dbs[name])
          expect(rows, `${name}'s acknowledged deliveries`).toEqual(
            acknowledged[name].map((row) => ({ id: row.id, status: 'processed' })),
          )
          return true
        },
        20_000,
        `${name}'s deliveries applied`,
      )
      for (const [table, id, value] of changes[name].renamed)
        expect(await rowOf(dbs[name], table, id), `${name} ${table} ${id}`).toEqual({
          name: value,
          deleted: false,
        })
      expect((await rowOf(dbs[name], 'people', changes[name].destroyed))?.deleted, `${name}: deleted`).toBe(
        true,
      )
      expect(await rowOf(dbs[name], 'people', changes[name].created), `${name}: created`).toEqual({
        name: `${name} created while A held its sweeps`,
        deleted: false,
      })
    }

    // Nothing of one account in the other's schemas: each inbox holds its own account's records only,
    // the other account's changes never reached its rows nor its history, and the code's own schemas
    // hold nothing.
    const delivered = (name: Name) =>
      new Set([
        ...changes[name].renamed.map(([table, id]) => `${table === 'people' ? 'person' : 'company'} ${id}`),
        `person ${changes[name].destroyed}`,
        `person ${changes[name].created}`,
      ])
    for (const name of NAMES) {
      const { rows } = await sql<{ delivery: string }>`
        select model || ' ' || record_id as delivery from sync.inbox order by id`.execute(dbs[name])
      expect(new Set(rows.map((row) => row.delivery)), `${name}'s inbox`).toEqual(delivered(name))
      const other = NAMES.find((candidate) => candidate !== name) as Name
      for (const [table, id, value] of changes[other].renamed) {
        expect((await rowOf(dbs[name], table, id))?.name, `${name} ${table} ${id}`).not.toBe(value)
        expect(await versionsNamed(dbs[name], table, id, value), `${name} ${table} ${id}`).toBe(0)
      }
      expect(
        (await rowOf(dbs[name], 'people', changes[other].destroyed))?.deleted,
        `${name}: ${other}'s deletion`,
      ).toBe(false)
    }
    const { rows: own } = await sql<{ people: number; inbox: number; runs: number }>`
      select (select count(*)::int from crm.people) as people, (select count(*)::int from sync.inbox) as inbox,
        (select count(*)::int from sync.runs) as runs`.execute(database.db)
    expect(own[0]).toEqual({ people: 0, inbox: 0, runs: 0 })

    console.log(
      `replica death: A held ${NAMES.map((name) => `${name}: ${held[name].map((s) => `${s.resource} (${s.pages} pages)`).join(', ')}`).join('; ')} ` +
        `when killed; at the kill ${openAtKill.rows[0]?.inbox} deliveries unapplied and ${openAtKill.rows[0]?.refreshes} refreshes open`,
    )
  }, 100_000)
})
