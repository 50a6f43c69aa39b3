// Several accounts in one deployment (ACCOUNTS_FILE, docs/accounts.md), the engine as `npm start`
// composes it, against three simulated upstreams whose records share ids: each account is mirrored
// into schemas of its own and converges there; its hooks point at its own path; a change or a deletion
// in one account reaches its mirror and no other; each account has its runs, its budgets and its
// queues; `crm-sync status --account south` shows that account's; the code's own schemas stay empty.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import type { Status } from '../../src/status/engine-status.ts'
import type { Db } from '../../src/store/database.ts'
import { publishedTables } from '../../src/store/publication.ts'
import { cli } from '../cli/run.ts'
import { type AccountsEngine, startAccountsEngine } from '../support/accounts-engine.ts'
import { createTestDatabase, type TestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { runEnded } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const NAMES = ['north', 'south', 'east'] as const
type Name = (typeof NAMES)[number]

const TOKEN = 'admin-token-0123456789'

const sandboxes = {} as Record<Name, Sandbox>
let database: TestDatabase
let accounts: AccountsEngine<Name>
let dbs: Record<Name, Db>
let env: Record<string, string>
let cwd: string

beforeAll(async () => {
  // north and south are seeded alike (their records share ids), east otherwise.
  for (const name of NAMES) {
    sandboxes[name] = await startSandbox({
      seed: name === 'east' ? 7 : 1,
      seedSize: name === 'east' ? 20 : 12,
      crmApiKey: `${name}-crm-key-0001`,
      reservationApiKey: `${name}-res-key-0001`,
      behaviour: { crmRateLimit: null, reservationRateLimit: null },
    })
  }
  database = await createTestDatabase()
  accounts = await startAccountsEngine(database, sandboxes, {
    rateLimit: 1000,
    settings: { ADMIN_TOKEN: TOKEN },
  })
  ;({ dbs, env, cwd } = accounts)
}, 60_000)

afterAll(async () => {
  await accounts?.stop()
})

const converged = (name: Name) =>
  waitFor(
    async () =>
      (await differences(dbs[name], sandboxes[name], { reservation: true })).length === 0 ? true : undefined,
    30_000,
    `${name} converged`,
  )

const nameOf = async (db: Db, id: number) =>
  (
    await sql<{ name: string | null; deleted: boolean }>`
      select name, _deleted_at is not null as deleted from crm.people where id = ${id}`.execute(db)
  ).rows[0]

describe('three accounts in one deployment', () => {
  it('mirrors each account into its own schemas, with its own runs and hooks', async () => {
    for (const name of NAMES) {
      const run = await runEnded(dbs[name], 1, 60_000)
      expect(run.status, name).toBe('succeeded')
      await converged(name)
      const hooks = sandboxes[name].control.crm.hooks()
      expect(hooks.length, name).toBeGreaterThan(0)
      for (const hook of hooks) expect(hook.target_url).toContain(`/accounts/${name}/webhooks/crm/`)
    }
    // Each account's people, in its own table: as many as its upstream has, ids shared across accounts.
    const counts = await Promise.all(
      NAMES.map(async (name) => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from crm.people`.execute(
          dbs[name],
        )
        return rows[0]?.n
      }),
    )
    expect(counts).toEqual(NAMES.map((name) => sandboxes[name].control.crm.liveIds('people').length))
    // The code's own schemas hold nothing of any account, and there is no sync.runs of theirs.
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from crm.people`.execute(database.db)
    expect(rows[0]?.n).toBe(0)
    const queues = await sql<{ name: string }>`select name from pgboss.queue order by name`.execute(
      database.db,
    )
    for (const name of NAMES) expect(queues.rows.map((row) => row.name)).toContain(`${name}/resource-sweep`)
  })

  it('takes a change and a deletion to the account they happened in, and to no other', async () => {
    const shared = sandboxes.north.control.crm
      .liveIds('people')
      .find((id) => sandboxes.south.control.crm.liveIds('people').includes(id)) as number
    expect(shared).toBeDefined()
    const southBefore = await nameOf(dbs.south, shared)
    sandboxes.north.control.crm.update('people', shared, { name: 'Changed in north only' })
    sandboxes.south.control.crm.destroy('people', shared)
    await waitFor(
      async () => {
        const north = await nameOf(dbs.north, shared)
        const south = await nameOf(dbs.south, shared)
        return north?.name === 'Changed in north only' && south?.deleted ? true : undefined
      },
      20_000,
      'the change in north and the deletion in south',
    )
    expect((await nameOf(dbs.north, shared))?.deleted).toBe(false)
    // The webhooks came through each account's receiver into its own inbox, and none into the code's.
    const inbox = async (db: Db) =>
      (
        await sql<{
          n: number
        }>`select count(*)::int as n from sync.inbox where record_id = ${shared}`.execute(db)
      ).rows[0]?.n
    expect(await inbox(dbs.north)).toBeGreaterThan(0)
    expect(await inbox(dbs.south)).toBeGreaterThan(0)
    expect(await inbox(database.db)).toBe(0)
    expect((await nameOf(dbs.south, shared))?.name).toBe(southBefore?.name)
    expect((await nameOf(dbs.east, shared))?.name).not.toBe('Changed in north only')
    for (const name of NAMES) await converged(name)
  })

  it('shows one account’s status with --account, every account’s without, and asks other commands for one', async () => {
    const south = await cli(['status', '--account', 'south', '--json'], env, cwd)
    expect(south.code, south.stderr).toBe(0)
    const status = JSON.parse(south.stdout) as Status
    const people = status.resources.find((resource) => resource.resource === 'crm.people')
    expect(people?.live_rows).toBe(sandboxes.south.control.crm.liveIds('people').length)

    const every = await cli(['status', '--json', '--no-hooks'], env, cwd)
    expect(every.code, every.stderr).toBe(0)
    const { accounts } = JSON.parse(every.stdout) as {
      accounts: (Status & { account: string; state: string })[]
    }
    expect(accounts.map((account) => account.account).sort()).toEqual([...NAMES].sort())
    for (const account of accounts) {
      const rows = account.resources.find((resource) => resource.resource === 'crm.people')?.live_rows
      expect(rows, account.account).toBe(
        sandboxes[account.account as Name].control.crm.liveIds('people').length,
      )
    }
    const text = await cli(['status', '--no-hooks'], env, cwd)
    expect(text.stdout).toMatch(/^Account (north|south|east): /)

    // One publication holds every account's mirror tables: current, whichever account is checked.
    const check = await cli(['check', '--account', 'north', '--json'], env, cwd)
    const lines = JSON.parse(check.stdout) as { checks: { check: string; outcome: string; detail: string }[] }
    const publication = lines.checks.find((line) => line.check === 'publication')
    expect(publication?.outcome, publication?.detail).toBe('ok')
    expect(publication?.detail).toMatch(
      new RegExp(`publication crm_sync_mirror of ${3 * publishedTables.length} tables`),
    )

    const unnamed = await cli(['runs', '--json'], env, cwd)
    expect(unnamed.code).toBe(2)
    expect(unnamed.stderr).toContain('there are 3 accounts (north, south, east): name one with --account')
    // Five CLI processes one after the other, each starting Node and connecting: 13-22 s here, 30 s
    // once in a CI pass with the suite's other files on the same two cores.
  }, 75_000)

  it('answers the admin API for the account ?account= names, and labels every metric with its account', async () => {
    const base = `http://127.0.0.1:${accounts.engine.port}`
    const admin = (path: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    const south = await admin('/admin/status?account=south')
    expect(south.status).toBe(200)
    const status = (await south.json()) as Status
    expect(status.resources.find((resource) => resource.resource === 'crm.people')?.live_rows).toBe(
      sandboxes.south.control.crm.liveIds('people').length,
    )
    const unnamed = await admin('/admin/status')
    expect(unnamed.status).toBe(400)
    expect(((await unnamed.json()) as { error: string }).error).toBe(
      'name the account with ?account=: one of north, south, east',
    )
    expect((await admin('/admin/status?account=west')).status).toBe(404)

    const metrics = await (await fetch(`${base}/metrics`)).text()
    for (const name of NAMES)
      expect(metrics).toMatch(new RegExp(`crm_sync_records_applied_total\\{[^}]*account="${name}"`))
    expect(metrics.match(/^# HELP process_cpu_seconds_total /gm)).toHaveLength(1)
    expect(metrics.match(/^# HELP crm_sync_records_applied_total /gm)).toHaveLength(1)
  })
})
