// The engine killed (SIGKILL) while the sweeps of the newer tables are mid-walk: notes with their links,
// attachments, activities, custom field types, filter groups with their members, reservation tags,
// webforms and the tags of contacts, each seeded over several pages of 10 with latency on every call.
// While it is down, records it had mirrored are deleted and edited upstream and others created. Started
// again, it takes the interrupted sweeps up from their checkpoints, and the mirror comes to equal the
// sandbox for every table (link, member and tag sets included, the deletions tombstoned), with no
// attachment's file anywhere in the database. Then `crm-sync status`, the admin API and /metrics report
// each new table's rows. A second test shows that the comparison sees what it is trusted to see.
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import type { Status } from '../../src/status/engine-status.ts'
import type { Db } from '../../src/store/database.ts'
import { cli } from '../cli/run.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { ENGINE_SECRET } from '../support/engine.ts'
import { type CliProcess, runCli, waitFor } from '../support/process.ts'
import { sampleOf } from '../support/prometheus.ts'
import { differences } from '../support/truth.ts'
import { sandboxConfig, sweep, sweepDeps } from './support.ts'

let sandbox: Sandbox | undefined
let database: TestDatabase | undefined
let cwd: string | undefined
const children: CliProcess[] = []

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL')
    await child.exited
  }
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  if (cwd) await rm(cwd, { recursive: true, force: true })
  sandbox = database = cwd = undefined
})

/** The newer tables (main tables; their child and member tables are compared with them). */
const NEW_TABLES = [
  'crm.custom_field_types',
  'crm.notes',
  'crm.activities',
  'crm.attachments',
  'crm.filter_groups',
  'reservations.tags',
  'reservations.webforms',
] as const

// The older resources small (a page or two), the newer ones over several pages of 10 (tags and
// webforms in pages of 5, the size the reservation service picks for them).
const SEED = {
  people: 25,
  companies: 6,
  deals: 5,
  projects: 4,
  tasks: 6,
  custom_fields_types: 45,
  protocols: 90,
  filter_groups: 8,
  activities: 120,
  attachments: 90,
  contacts: 25,
  bookings: 5,
  tags: 50,
  webforms: 45,
}

const ADMIN_TOKEN = 'crash-admin-token-0123456789'

/** Probe for waitFor: the mirror equals the sandbox in every table, member sets included. */
const inSync = (db: Db, upstream: Sandbox) => async () => {
  expect(await differences(db, upstream, { reservation: true, members: true, limit: 20 })).toEqual([])
  return true
}

/**
 * Every non-empty value of every text, json and jsonb column of every table in the mirror's and the
 * engine's schemas (crm, reservations, sync, and the job queue's), as text.
 */
async function everyStoredText(db: Db): Promise<string[]> {
  const { rows: columns } = await sql<{ schema: string; table: string; column: string }>`
    select c.table_schema as schema, c.table_name as table, c.column_name as column
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where t.table_type = 'BASE TABLE'
      and c.data_type in ('text', 'character varying', 'json', 'jsonb')
      and c.table_schema not in ('pg_catalog', 'information_schema')`.execute(db)
  const schemas = new Set(columns.map((column) => column.schema))
  expect([...schemas]).toEqual(expect.arrayContaining(['crm', 'reservations', 'sync']))
  const values: string[] = []
  for (const { schema, table, column } of columns) {
    const { rows } = await sql<{ value: string | null }>`
      select ${sql.ref(column)}::text as value from ${sql.table(`${schema}.${table}`)}
      where ${sql.ref(column)} is not null`.execute(db)
    for (const row of rows) if (row.value) values.push(row.value)
  }
  return values
}

type SweepRow = { run_id: number; resource: string; status: string; pages: number }

async function sweepsOf(db: Db): Promise<SweepRow[]> {
  const { rows } = await sql<SweepRow>`
    select run_id, resource, status, pages from sync.run_resources order by run_id, resource`.execute(db)
  return rows
}

/** Ids of up to `count` live rows of the mirror's table, as text, lowest first. */
async function mirrored(db: Db, table: string, count: number): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    select id::text as id from ${sql.table(table)} where _deleted_at is null order by id limit ${count}`.execute(
    db,
  )
  return rows.map((row) => row.id)
}

/**
 * What changes upstream while the engine is down: of each new table, records it had mirrored deleted
 * and edited, a record created; a person changed (an activity); a contact's tag taken off. Returns the
 * deleted ones (`table id`), which the mirror must tombstone.
 */
async function changeWhileDown(db: Db, upstream: Sandbox): Promise<string[]> {
  const { crm, reservation } = upstream.control
  const deleted: string[] = []
  const numbers = async (table: string, count: number) => (await mirrored(db, table, count)).map(Number)
  const [goneType, renamedType] = await numbers('crm.custom_field_types', 2)
  if (goneType && renamedType) {
    crm.destroy('custom_fields_types', goneType)
    crm.update('custom_fields_types', renamedType, { name: 'umbenannt' })
    deleted.push(`crm.custom_field_types ${goneType}`)
  }
  const [goneNote, editedNote] = await numbers('crm.notes', 2)
  if (goneNote && editedNote) {
    crm.destroy('protocols', goneNote)
    crm.update('protocols', editedNote, { content: 'geändert, während es lag' })
    deleted.push(`crm.notes ${goneNote}`)
  }
  for (const uuid of await mirrored(db, 'crm.attachments', 1)) {
    const id = crm.liveIds('attachments').find((n) => crm.get('attachments', n)?.uuid === uuid) as number
    crm.destroy('attachments', id)
    deleted.push(`crm.attachments ${uuid}`)
  }
  for (const id of await numbers('crm.filter_groups', 1)) {
    crm.destroy('filter_groups', id)
    deleted.push(`crm.filter_groups ${id}`)
  }
  crm.create('protocols', { name: 'neu, während es lag', person_ids: [crm.liveIds('people')[0] as number] })
  crm.update('tasks', crm.liveIds('tasks')[0] as number, { name: 'geändert, während es lag' })
  const [goneTag, renamedTag] = await numbers('reservations.tags', 2)
  if (goneTag && renamedTag) {
    reservation.destroy('tags', goneTag)
    reservation.update('tags', renamedTag, { name: 'umbenannt' })
    deleted.push(`reservations.tags ${goneTag}`)
  }
  for (const id of await numbers('reservations.webforms', 1)) {
    reservation.destroy('webforms', id)
    deleted.push(`reservations.webforms ${id}`)
  }
  reservation.create('webforms', { name: 'neu, während es lag' })
  const tagged = reservation
    .liveIds('contacts')
    .map((id) => reservation.get('contacts', id) as { id: number; tags: { id: number }[] })
    .find((contact) => contact.tags.length > 0)
  if (tagged) reservation.untagContact(tagged.id, tagged.tags[0]?.id as number)
  return deleted
}

describe('killed while the sweeps of the newer tables are mid-walk', () => {
  it('converges after the restart: every table, link, member and tag set, and no file stored', async () => {
    const upstream = await startSandbox({
      seedSize: SEED,
      seed: 11,
      behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: 5 },
      undocumentedPaging: { pageSize: 5 },
      // Slow enough that walks, which keep pages in flight under latency, are caught mid-walk.
      faults: { crm: { latencyMs: 300 }, reservation: { latencyMs: 500 } },
    })
    sandbox = upstream
    database = await createTestDatabase()
    const { db } = database
    // Several pages of each: the sandbox's live records, against pages of 10 (5 for tags and webforms).
    const crm = upstream.control.crm
    const reservation = upstream.control.reservation
    expect(crm.liveIds('activities').length).toBe(120)
    expect(crm.liveIds('custom_fields_types').length).toBeGreaterThan(30)
    expect(reservation.liveIds('tags').length).toBe(50)
    // A group of every person: its members take three pages.
    crm.create('filter_groups', { name: 'Alle', model_type: 'Person', letters: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' })
    const groups = crm.liveIds('filter_groups').map((id) => crm.filterGroupMembers(id)?.ids.length ?? 0)
    expect(Math.max(...groups)).toBeGreaterThan(20)

    cwd = await mkdtemp(join(tmpdir(), 'crm-sync-crash-'))
    await chmod(cwd, 0o755)
    const port = await freePort()
    const env = {
      CRM_BASE_URL: upstream.crmUrl,
      CRM_API_KEY: upstream.crmApiKey,
      RESERVATION_BASE_URL: upstream.reservationUrl,
      RESERVATION_API_KEY: upstream.reservationApiKey,
      DATABASE_URL: database.url,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WEBHOOK_SECRET: ENGINE_SECRET,
      ADMIN_TOKEN,
      CRM_RATE_LIMIT: '1000',
      RESERVATION_RATE_LIMIT: '1000',
      LOG_LEVEL: 'warn',
      // What deletions shift across pages a resumed walk had read, the next verification walk finds.
      INCREMENTAL_SYNC_INTERVAL: '10',
    }
    const first = runCli(['start'], { cwd, env })
    children.push(first)
    // Killed once three of the newer tables' sweeps, of both services, have checkpointed two pages and go on.
    const midWalk = await waitFor(
      async () => {
        const sweeps = await sweepsOf(db)
        const running = sweeps.filter(
          (row) =>
            row.status === 'running' &&
            row.pages >= 2 &&
            (NEW_TABLES as readonly string[]).includes(row.resource),
        )
        const services = new Set(running.map((row) => row.resource.split('.')[0]))
        expect(running.length >= 3 && services.size === 2, JSON.stringify(sweeps)).toBe(true)
        return running
      },
      60_000,
      'three sweeps of the newer tables of both services under way',
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${first.output().slice(-4000)}`)
    })
    first.child.kill('SIGKILL')
    await first.exited
    const killedAt = Date.now()
    const atKill = (await sweepsOf(db)).filter((row) => row.status === 'running' || row.status === 'queued')
    const interrupted = atKill.filter((row) => row.status === 'running')
    expect(interrupted.length).toBeGreaterThanOrEqual(midWalk.length)

    // While it is down, records it had mirrored are deleted and edited upstream, others created.
    const deleted = await changeWhileDown(db, upstream)
    expect(new Set(deleted.map((entry) => entry.split('.')[0])), deleted.join(', ')).toEqual(
      new Set(['crm', 'reservations']),
    )

    const second = runCli(['start'], { cwd, env })
    children.push(second)
    // Each sweep the kill interrupted is taken up again where it stood, and finishes.
    const finished = await waitFor(
      async () => {
        const rows = await sweepsOf(db)
        const of = (sweep: SweepRow) =>
          rows.find((row) => row.run_id === sweep.run_id && row.resource === sweep.resource)
        return atKill.every((sweep) => of(sweep)?.status === 'succeeded') ? rows : undefined
      },
      60_000,
      'the interrupted sweeps to finish',
    ).catch(async (error) => {
      throw new Error(`${(error as Error).message}\n${second.output().slice(-4000)}`)
    })
    const resumedMs = Date.now() - killedAt
    // A resumed walk misses what a deletion on the pages it had read shifted past its checkpoint (offset
    // paging), and took the deleted records as seen: the next verification walk brings both.
    const leftByResumed = await differences(db, upstream, { reservation: true, members: true, limit: 100 })
    await waitFor(inSync(db, upstream), 90_000, 'convergence after the restart').catch(async (error) => {
      throw new Error(`${(error as Error).message}\n${second.output().slice(-4000)}`)
    })
    const convergedMs = Date.now() - killedAt

    const pagesAfter = (sweep: SweepRow) =>
      finished.find((row) => row.run_id === sweep.run_id && row.resource === sweep.resource)?.pages ?? 0
    for (const sweep of interrupted)
      expect(pagesAfter(sweep), sweep.resource).toBeGreaterThanOrEqual(sweep.pages)
    // Of the newer tables' walks under way, at least two went on to further pages after the restart.
    const walkedOn = interrupted.filter(
      (sweep) =>
        (NEW_TABLES as readonly string[]).includes(sweep.resource) && pagesAfter(sweep) > sweep.pages,
    )
    expect(walkedOn.length, JSON.stringify({ atKill, finished })).toBeGreaterThanOrEqual(2)
    // Converged, and still so once every interrupted sweep had finished; what was deleted while it was
    // down is tombstoned.
    await inSync(db, upstream)()
    for (const entry of deleted) {
      const [table, id] = entry.split(' ') as [string, string]
      const { rows } = await sql<{ gone: boolean }>`
        select _deleted_at is not null as gone from ${sql.table(table)} where id::text = ${id}`.execute(db)
      expect(rows, entry).toEqual([{ gone: true }])
    }

    // No file of any attachment is stored, in any table: not its first 40 Base64 characters.
    const files = crm.liveIds('attachments').map((id) => {
      const listed = crm.get('attachments', id) as { data?: string }
      return listed.data ?? ''
    })
    expect(files.every((file) => file.length > 40)).toBe(true)
    const stored = await everyStoredText(db)
    const probes = files.map((file) => file.slice(0, 40))
    expect(probes.filter((probe) => stored.some((value) => value.includes(probe)))).toEqual([])
    const { rows: withData } = await sql<{ n: number }>`
      select count(*)::int as n from crm.attachments where _raw ? 'data'`.execute(db)
    expect(withData[0]?.n).toBe(0)

    // What crm-sync status, the admin API and /metrics say of each new table: its live rows.
    const live = async (table: string) => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from ${sql.table(table)} where _deleted_at is null`.execute(db)
      return rows[0]?.n ?? 0
    }
    const expected = Object.fromEntries(
      await Promise.all(NEW_TABLES.map(async (table) => [table, await live(table)] as const)),
    )
    expect(expected['crm.attachments']).toBe(crm.liveIds('attachments').length)
    expect(expected['reservations.webforms']).toBe(reservation.liveIds('webforms').length)
    const rowsOf = (status: Status) =>
      Object.fromEntries(
        status.resources
          .filter((entry) => (NEW_TABLES as readonly string[]).includes(entry.resource))
          .map((entry) => [entry.resource, entry.live_rows]),
      )
    const status = await cli(['status', '--json', '--no-hooks'], env, cwd)
    expect(status.code, status.stderr).toBe(0)
    expect(rowsOf(JSON.parse(status.stdout) as Status)).toEqual(expected)
    const admin = await fetch(`http://127.0.0.1:${port}/admin/status`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
    expect(admin.status).toBe(200)
    expect(rowsOf((await admin.json()) as Status)).toEqual(expected)
    const scraped = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    for (const table of NEW_TABLES) {
      expect(sampleOf(scraped, 'crm_sync_live_rows', { resource: table }), table).toBe(expected[table])
      expect(
        sampleOf(scraped, 'crm_sync_last_success_timestamp_seconds', { resource: table }),
        table,
      ).toBeGreaterThan(0)
    }

    console.log(
      `killed with ${interrupted.map((row) => `${row.resource} at page ${row.pages} (then ${pagesAfter(row)})`).join(', ')} under way; the interrupted sweeps finished ${resumedMs} ms after the kill (${leftByResumed.length} differences left: ${leftByResumed.slice(0, 4).join('; ')}), converged ${convergedMs} ms after it`,
    )
  }, 240_000)

  it('the comparison sees a wrong link, member or tag set, and a changed field of each new table', async () => {
    const upstream = await startSandbox({
      seedSize: { ...SEED, activities: 10 },
      seed: 12,
      behaviour: { crmRateLimit: null, reservationRateLimit: null },
    })
    sandbox = upstream
    database = await createTestDatabase()
    const { db } = database
    await sweep(sweepDeps(db, sandboxConfig(upstream)), { mode: 'full', resources: [...NEW_TABLES] })
    await sweep(sweepDeps(db, sandboxConfig(upstream)), {
      mode: 'full',
      resources: ['reservations.contacts'],
    })
    const only = [...NEW_TABLES, 'reservations.contacts']
    const found = () => differences(db, upstream, { reservation: true, members: true, only, limit: 100 })
    expect(await found()).toEqual([])

    await sql`
      with link as (select ctid from crm.note_links limit 1) delete from crm.note_links where ctid in (select ctid from link);
      with member as (select ctid from crm.filter_group_members limit 1)
        delete from crm.filter_group_members where ctid in (select ctid from member);
      update reservations.contact_tags set name = 'not so' where ctid = (select ctid from reservations.contact_tags limit 1);
      update crm.custom_field_types set name = 'renamed' where id = (select min(id) from crm.custom_field_types);
      update crm.activities set updated_at = updated_at + interval '1 hour' where id = (select min(id) from crm.activities);
      update crm.attachments set filename = 'other.pdf' where id = (select min(id) from crm.attachments);
      update reservations.tags set _deleted_at = now() where id = (select min(id) from reservations.tags);
      update reservations.webforms set name = 'other' where id = (select min(id) from reservations.webforms);
    `.execute(db)
    const lines = await found()
    const tables = [...new Set(lines.map((line) => line.split(' ')[0]))].sort()
    expect(tables).toEqual(
      [
        'crm.activities',
        'crm.attachments',
        'crm.custom_field_types',
        'crm.filter_group_members',
        'crm.notes',
        'reservations.contacts',
        'reservations.tags',
        'reservations.webforms',
      ].sort(),
    )
    expect(lines.find((line) => line.startsWith('crm.notes'))).toMatch(/_ids ".*" != ".*"/)
    expect(lines.find((line) => line.startsWith('reservations.contacts'))).toMatch(/tags ".*" != ".*"/)
    expect(lines.find((line) => line.startsWith('crm.filter_group_members'))).toMatch(/members: missing \[/)
  })
})
