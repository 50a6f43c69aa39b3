// The demo's summary, without running the demo: after a sweep of every resource of a seeded sandbox,
// its rows per table name every main table (live and deleted rows), every child table and the member
// table of the filter groups, with the mirror's counts; the newer tables among them.
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { renderSummary } from '../../demo/summary.ts'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { childTables, resourceNames, resources } from '../../src/resources/index.ts'
import { useTestDatabase } from '../support/database.ts'
import { sandboxConfig, sweep, sweepDeps } from '../sync/support.ts'

const database = useTestDatabase()
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await startSandbox({
    seedSize: 12,
    seed: 3,
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
})
afterAll(async () => {
  await sandbox?.stop()
})

describe("the demo's summary", () => {
  it('counts the rows of every main, child and member table, the newer ones included', async () => {
    const { db } = database
    const runId = await sweep(sweepDeps(db, sandboxConfig(sandbox)), {
      mode: 'full',
      resources: resourceNames,
    })
    const { rows: swept } = await sql<{ status: string }>`
      select status from sync.runs where id = ${runId}`.execute(db)
    expect(swept[0]?.status).toBe('succeeded')
    const gone = sandbox.control.reservation.liveIds('webforms')[0] as number
    await sql`update reservations.webforms set _deleted_at = now() where id = ${gone}`.execute(db)

    const summary = await renderSummary(db, {
      initialSyncMs: 1000,
      initialRequests: 10,
      changes: 0,
      convergenceMs: 0,
      counters: sandbox.control.counters(),
      databaseUrl: null,
    })
    const section = summary.slice(summary.indexOf('Rows per table'), summary.indexOf('Webhook deliveries'))
    const row = (table: string) => new RegExp(`^${table.replace('.', '\\.')}\\s+(\\d+)\\s+(\\d+|-)$`, 'm')
    const counted = (table: string) => {
      const match = row(table).exec(section)
      expect(match, `${table} in\n${section}`).not.toBeNull()
      return { live: Number(match?.[1]), deleted: match?.[2] }
    }
    const count = async (query: string) =>
      (await sql<{ n: number }>`${sql.raw(`select count(*)::int as n from ${query}`)}`.execute(db)).rows[0]?.n
    for (const resource of resources) {
      const live = await count(`${resource.name} where _deleted_at is null`)
      const deleted = await count(`${resource.name} where _deleted_at is not null`)
      expect(counted(resource.name), resource.name).toEqual({ live, deleted: String(deleted) })
    }
    const others = [...childTables.map((child) => child.table), 'crm.filter_group_members']
    for (const table of new Set(others))
      expect(counted(table), table).toEqual({ live: await count(table), deleted: '-' })
    // The newer tables hold rows, and the one tombstoned webform shows.
    for (const table of [
      'crm.notes',
      'crm.note_links',
      'crm.attachments',
      'crm.activities',
      'crm.custom_field_types',
      'crm.filter_groups',
      'crm.filter_group_members',
      'reservations.tags',
      'reservations.webforms',
      'reservations.contact_tags',
    ])
      expect(counted(table).live, table).toBeGreaterThan(0)
    expect(counted('reservations.webforms').deleted).toBe('1')
  })
})
