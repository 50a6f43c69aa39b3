// crm.filter_groups and their members (crm.filter_group_members) against the sandbox: from empty, the
// groups and every group's member set, at one request per group of up to 249 members; membership that
// changes with the records, brought by the next full sweep (and by any sweep once a group's count
// changes); a read of a group's pages that fails part way, which leaves the group's previous set; and a
// deleted group, tombstoned with its members removed.
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { type Sandbox, type SandboxControl, startSandbox } from '../../sandbox/index.ts'
import { compareMirror, describe as describeDifferences } from '../../sandbox/mirror-truth.ts'
import { type UpstreamClients, UpstreamUnavailableError } from '../../src/api-client/index.ts'
import { filterGroups } from '../../src/resources/crm-filter-groups.ts'
import type { Db } from '../../src/store/database.ts'
import { readRun } from '../../src/store/runs.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { sandboxConfig, sweep, sweepDeps } from './support.ts'

let sandbox: Sandbox | undefined
let database: TestDatabase | undefined

afterEach(async () => {
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  sandbox = database = undefined
})

const SEED = { people: 60, companies: 15, deals: 10, projects: 8, filter_groups: 6 }
const GROUPS = ['crm.filter_groups']

async function start(maxPerpage = 250) {
  const upstream = await startSandbox({
    seedSize: SEED,
    seed: 4,
    behaviour: { crmRateLimit: null, maxPerpage },
  })
  sandbox = upstream
  database = await createTestDatabase()
  return { upstream, db: database.db, deps: sweepDeps(database.db, sandboxConfig(upstream)) }
}

/** Differences of the groups and their member sets from the sandbox. */
async function groupDifferences(db: Db, upstream: Sandbox): Promise<string[]> {
  const tables = await compareMirror(db, upstream, {
    include: (resource) => resource === filterGroups,
    members: true,
    limit: 50,
  })
  return describeDifferences(tables, 50)
}

/** The member rows of one group, as `resource id` lines. */
async function membersOf(db: Db, group: number): Promise<string[]> {
  const { rows } = await sql<{ line: string }>`
    select member_resource || ' ' || member_id as line from crm.filter_group_members
    where filter_group_id = ${group} order by 1`.execute(db)
  return rows.map((row) => row.line)
}

/** The group is tombstoned and has no member rows left. */
async function expectGone(db: Db, group: number): Promise<void> {
  const row = await db
    .selectFrom('crm.filter_groups')
    .select(['_deleted_at'])
    .where('id', '=', group)
    .executeTakeFirst()
  expect(row?._deleted_at).toBeInstanceOf(Date)
  expect(await membersOf(db, group)).toEqual([])
}

const memberRequests = (upstream: Sandbox) =>
  upstream.control.counters().crm.routes['GET /api/filter_groups/:id'] ?? 0

const personName = (control: SandboxControl, id: number) => String(control.crm.get('people', id)?.name ?? '')

describe('crm.filter_groups', () => {
  it('from empty a sweep brings every group and its member set, one request per group', async () => {
    const { upstream, db, deps } = await start()
    const crm = upstream.control.crm
    const [first, second] = crm.liveIds('people') as [number, number]
    const fixed = crm.create('filter_groups', {
      name: 'Zwei Kontakte',
      model_type: 'Person',
      member_ids: [first, second],
    })
    crm.create('filter_groups', { name: 'Leer', model_type: 'Deal', letters: 'Q' })
    const groups = crm.liveIds('filter_groups')
    expect(groups).toHaveLength(8)
    expect(crm.filterGroupMembers(fixed.id)?.ids).toEqual([first, second].sort((a, b) => a - b))
    const types = new Set(groups.map((id) => crm.get('filter_groups', id)?.model_type))
    expect([...types].sort()).toEqual(['Company', 'Deal', 'Person', 'Project'])

    const runId = await sweep(deps, { mode: 'incremental', resources: GROUPS })

    expect((await readRun(db, runId))?.status).toBe('succeeded')
    expect(await groupDifferences(db, upstream)).toEqual([])
    expect(await membersOf(db, fixed.id)).toEqual([`crm.people ${first}`, `crm.people ${second}`].sort())
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from crm.filter_group_members`.execute(db)
    expect(rows[0]?.n).toBeGreaterThan(10)
    // Up to 249 members: the first page is the last.
    expect(memberRequests(upstream)).toBe(groups.length)

    // Nothing changed: an incremental sweep reads no group's members.
    const before = memberRequests(upstream)
    await sweep(deps, { mode: 'incremental', resources: GROUPS })
    expect(memberRequests(upstream) - before).toBe(0)
  })

  it('brings membership that changed with the records: a changed count at once, the rest by the full sweep', async () => {
    const { upstream, db, deps } = await start()
    const crm = upstream.control.crm
    const people = crm.liveIds('people')
    const inLetters = (id: number) => 'ABCDEF'.includes(personName(upstream.control, id).charAt(0))
    const [outside, ...others] = people.filter((id) => !inLetters(id)) as [number, ...number[]]
    const inside = people.find(inLetters) as number
    const chosen = others.slice(0, 4)
    const byLetters = crm.create('filter_groups', {
      name: 'A bis F',
      model_type: 'Person',
      letters: 'ABCDEF',
    })
    const byIds = crm.create('filter_groups', { name: 'Auswahl', model_type: 'Person', member_ids: chosen })
    await sweep(deps, { mode: 'incremental', resources: GROUPS })
    expect(await groupDifferences(db, upstream)).toEqual([])

    // One member leaves the letters group and one person joins it: its count stays the same.
    crm.update('people', inside, { name: 'Zander' })
    crm.update('people', outside, { name: 'Adler' })
    // A member of the fixed list is deleted: that group's count changes.
    crm.destroy('people', chosen[0] as number)

    const before = memberRequests(upstream)
    await sweep(deps, { mode: 'incremental', resources: GROUPS })
    // The group whose count changed is read again, at once.
    expect(await membersOf(db, byIds.id)).toEqual(
      chosen
        .slice(1)
        .map((id) => `crm.people ${id}`)
        .sort(),
    )
    // The other may lag until the full sweep.
    const lagging = await groupDifferences(db, upstream)
    expect(lagging.every((line) => !line.includes(` ${byIds.id}:`))).toBe(true)
    expect(lagging.some((line) => line.includes(` ${byLetters.id}:`))).toBe(true)
    const incrementalRequests = memberRequests(upstream) - before
    expect(incrementalRequests).toBeLessThan(crm.liveIds('filter_groups').length)

    const runId = await sweep(deps, { mode: 'full', resources: GROUPS })
    expect((await readRun(db, runId))?.status).toBe('succeeded')
    expect(await groupDifferences(db, upstream)).toEqual([])
    expect(await membersOf(db, byLetters.id)).toContain(`crm.people ${outside}`)
    expect(await membersOf(db, byLetters.id)).not.toContain(`crm.people ${inside}`)
  })

  it('keeps the previous member set of a group whose pages could not all be read', async () => {
    // Pages of 5: a group of more than 5 members takes several requests.
    const { upstream, db, deps } = await start(5)
    const crm = upstream.control.crm
    const big = crm.create('filter_groups', { name: 'Viele', model_type: 'Person', letters: 'ABCDEFGHIJKLM' })
    await sweep(deps, { mode: 'incremental', resources: GROUPS })
    expect(await groupDifferences(db, upstream)).toEqual([])
    const members = crm.filterGroupMembers(big.id)?.ids ?? []
    expect(members.length).toBeGreaterThan(10)
    // Pages short of the 250 asked for end the read once the group's count is reached: a group of n
    // members costs ceil(n / 5) requests here, an empty one one.
    const pagesOfGroups = crm
      .liveIds('filter_groups')
      .map((id) => Math.max(1, Math.ceil((crm.filterGroupMembers(id)?.ids.length ?? 0) / 5)))
    expect(memberRequests(upstream)).toBe(pagesOfGroups.reduce((sum, pages) => sum + pages, 0))
    const previous = await membersOf(db, big.id)

    // The first member leaves; a person joins.
    crm.update('people', members[0] as number, { name: 'Zuse' })
    const joining = crm.liveIds('people').find((id) => !members.includes(id)) as number
    crm.update('people', joining, { name: 'Berg' })

    // The second page of every group fails, whatever the retries.
    const failing = sweepDeps(db, sandboxConfig(upstream), {
      wrap: (clients: UpstreamClients) => ({
        ...clients,
        crm: {
          ...clients.crm,
          index: (resource, query) => {
            if (resource.path.startsWith('filter_groups/') && (query?.page ?? 1) > 1) {
              const line = {
                service: 'crm' as const,
                method: 'GET',
                path: `/api/${resource.path}`,
                sentAt: new Date(),
              }
              return Promise.reject(
                new UpstreamUnavailableError(line, 'network', 3, null, null, 'ECONNRESET'),
              )
            }
            return clients.crm.index(resource, query)
          },
        },
      }),
    })
    const failed = await sweep(failing, { mode: 'full', resources: GROUPS })
    expect((await readRun(db, failed))?.status).toBe('failed')
    expect(await membersOf(db, big.id)).toEqual(previous)

    // The next full sweep reads every group again.
    const runId = await sweep(deps, { mode: 'full', resources: GROUPS })
    expect((await readRun(db, runId))?.status).toBe('succeeded')
    expect(await groupDifferences(db, upstream)).toEqual([])
    expect(await membersOf(db, big.id)).toContain(`crm.people ${joining}`)
  })

  it('tombstones a group deleted after the walk saw it, when its members answer 404', async () => {
    const { upstream, db } = await start()
    const crm = upstream.control.crm
    const doomed = crm.create('filter_groups', { name: 'Gleich weg', model_type: 'Person', letters: 'ABC' })
    // The group is deleted once the walk has read the index that lists it.
    const racing = sweepDeps(db, sandboxConfig(upstream), {
      wrap: (clients: UpstreamClients) => ({
        ...clients,
        crm: {
          ...clients.crm,
          async index(resource, query) {
            const page = await clients.crm.index(resource, query)
            if (resource === filterGroups && crm.get('filter_groups', doomed.id))
              crm.destroy('filter_groups', doomed.id)
            return page
          },
        },
      }),
    })
    const runId = await sweep(racing, { mode: 'incremental', resources: GROUPS })
    expect((await readRun(db, runId))?.status).toBe('succeeded')
    await expectGone(db, doomed.id)
    expect(await groupDifferences(db, upstream)).toEqual([])
  })

  it('tombstones a deleted group and removes its members', async () => {
    const { upstream, db, deps } = await start()
    const crm = upstream.control.crm
    const doomed = crm.create('filter_groups', {
      name: 'Weg damit',
      model_type: 'Company',
      letters: 'ABCDEFGHIJ',
    })
    await sweep(deps, { mode: 'incremental', resources: GROUPS })
    expect((await membersOf(db, doomed.id)).length).toBeGreaterThan(0)

    crm.destroy('filter_groups', doomed.id)
    const runId = await sweep(deps, { mode: 'full', resources: GROUPS })

    expect((await readRun(db, runId))?.status).toBe('succeeded')
    await expectGone(db, doomed.id)
    const reads = await db
      .selectFrom('sync.member_reads')
      .select('group_id')
      .where('group_id', '=', doomed.id)
      .execute()
    expect(reads).toEqual([])
    expect(await groupDifferences(db, upstream)).toEqual([])
  })
})
