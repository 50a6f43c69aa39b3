// Merges of people and companies, with the engine as `npm start` runs it, at several pages and under the
// sandbox's hostile faults, with incremental runs only (no activity feed, no schedule but the run at
// start). The sandbox merges the least helpful way the facts allow: the losers vanish without a webhook,
// their tasks, notes and memberships (a company's people's positions, deals and projects; a person's
// places among deals' and projects' people) move to the winner without touching those records'
// `updated_at`, and only the winner changes, with its webhook.
//
// The count shows the losers gone: one incremental run walks to the last page and reconciles them (404:
// tombstoned), and the checks of a tombstoned record's dependants bring what moved: its tasks and notes,
// and the deals, projects and people that named it (src/resources/crm.ts: `memberships`), which no
// incremental walk reads again when they lie past its newest pages. Without those membership checks,
// such deals, projects and positions keep naming the loser until a full run reads them. A status change
// (change_status: by default no updated_at, no webhook) past the newest pages waits for the full run.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { companies, people } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { liveDependants } from '../../src/store/dependants.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { requestRun } from '../support/runs.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()

/** Three pages of people, deals and projects at 250 a page; two of companies, tasks and notes. */
const SEED = { people: 700, companies: 260, deals: 600, projects: 600, tasks: 480, protocols: 300 }
const FAULTS = {
  deliveries: { dropRate: 0.15, duplicateRate: 0.05, delayRate: 0.3, delayMs: 400 },
  crm: { errorRate: 0.02, throttleRate: 0.02 },
}
/**
 * Past the first two pages: an incremental walk that stops at its watermark reads page 1, and page 2 when
 * page 1 holds a record newer than the watermark; never page 3.
 */
const UNREAD = 520

type Collection = 'people' | 'companies' | 'deals' | 'projects' | 'tasks' | 'protocols'
type Upstream = Record<string, unknown>

/** Live ids as the index lists them with `updated_at-desc`: newest first, ties by id. */
function newestFirst(upstream: Sandbox, collection: Collection): number[] {
  const { crm } = upstream.control
  return crm
    .liveIds(collection)
    .map((id) => ({ id, at: Date.parse(String(crm.get(collection, id)?.updated_at)) }))
    .sort((a, b) => b.at - a.at || a.id - b.id)
    .map((record) => record.id)
}

const records = (upstream: Sandbox, collection: Collection, ids: number[]) =>
  ids.map((id) => upstream.control.crm.get(collection, id) as Upstream)

/** The first id `pick` finds in a record of these, not yet among `taken`. */
function firstFree(found: readonly Upstream[], pick: (record: Upstream) => unknown[], taken: Set<number>) {
  for (const record of found) {
    const id = pick(record)
      .map(Number)
      .find((candidate) => candidate > 0 && !taken.has(candidate))
    if (id !== undefined) return id
  }
  return undefined
}

/** Ids of the people (or companies) named by records of these lists, one per list, all different. */
function losersNamedBy(lists: [string, Upstream[], (record: Upstream) => unknown[]][], taken: Set<number>) {
  const losers: number[] = []
  for (const [what, found, pick] of lists) {
    const loser = firstFree(found, pick, taken)
    expect(loser, `a loser named by ${what}`).toBeDefined()
    losers.push(loser as number)
    taken.add(loser as number)
  }
  return losers
}

async function startAtSeveralPages() {
  const upstream = await startSandbox({ seedSize: SEED, seed: 17, behaviour: { crmRateLimit: null } })
  rig.sandbox(upstream)
  const database = rig.database(await createTestDatabase())
  rig.engine(
    await startEngine(upstream, database.url, {
      HOOK_OBJECT_TYPE: 'nested',
      // Incremental runs are slots aligned on the clock: a day's makes the one at start the only one.
      INCREMENTAL_SYNC_INTERVAL: '86400',
      ACTIVITY_POLL_SECONDS: '0',
      CRM_RATE_LIMIT: '1000',
    }),
  )
  await waitFor(inSync(database.db, upstream), 30_000, 'the first sync')
  return { upstream, db: database.db, url: database.url }
}

/** A probe for waitFor: throws the differences, references by id included, until there are none. */
const inSync = (db: Db, upstream: Sandbox) => async () => {
  expect(await differences(db, upstream, { references: true, limit: 20 })).toEqual([])
  return true
}

/** The merges drained, one incremental run, then the checks: how long until the mirror is in sync. */
async function incrementalConverges(db: Db, url: string, upstream: Sandbox, what: string) {
  await upstream.control.drainDeliveries()
  expect(await differences(db, upstream, { references: true }), 'the merges are silent').not.toEqual([])
  const started = Date.now()
  const run = await requestRun(db, url, { mode: 'incremental' }, 30_000)
  expect(run.status).toBe('succeeded')
  const runMs = Date.now() - started
  await waitFor(inSync(db, upstream), 20_000, `${what}: the dependants' checks after one incremental run`)
  return { ms: `${runMs} ms (the run) + ${Date.now() - started - runMs} ms`, run }
}

describe('merges', () => {
  it("check the deals and projects naming a tombstoned person, and a tombstoned company's people, deals and projects", async () => {
    const database = rig.database(await createTestDatabase())
    const { db } = database
    await sql`
      insert into crm.deals (id, company_id, _deleted_at) values (1, 7, null), (2, 8, null), (3, null, null),
        (4, 7, now());
      insert into crm.deal_people (_parent_resource, _parent_id, _ordinal, deal_id, person_id, _raw)
      values ('crm.deals', 3, 0, 3, 5, '{}'), ('crm.deals', 2, 1, 2, 5, '{}'), ('crm.deals', 1, 0, 1, 6, '{}');
      insert into crm.projects (id, company_id, _deleted_at) values (1, 7, null), (2, null, null);
      insert into crm.project_people (_parent_resource, _parent_id, _ordinal, project_id, person_id, _raw)
      values ('crm.projects', 2, 0, 2, 5, '{}');
      insert into crm.people (id, _deleted_at) values (5, null), (10, null), (11, null), (12, now());
      insert into crm.positions (_parent_resource, _parent_id, _ordinal, person_id, company_id, _raw)
      values ('crm.people', 10, 0, 10, 7, '{}'), ('crm.people', 12, 0, 12, 7, '{}'),
        ('crm.companies', 7, 0, 11, 7, '{}');
    `.execute(db)
    const ofPerson = await liveDependants(db, people, [5])
    expect(
      ofPerson.filter((entry) => entry.resource !== 'crm.tasks' && entry.resource !== 'crm.notes'),
    ).toEqual([
      { resource: 'crm.deals', ids: [2, 3] },
      { resource: 'crm.projects', ids: [2] },
    ])
    // Person 11's row is the company's own include (derived), person 12 is tombstoned, deal 4 too.
    const ofCompany = await liveDependants(db, companies, [7])
    expect(
      ofCompany.filter((entry) => entry.resource !== 'crm.tasks' && entry.resource !== 'crm.notes'),
    ).toEqual([
      { resource: 'crm.people', ids: [10] },
      { resource: 'crm.deals', ids: [1] },
      { resource: 'crm.projects', ids: [1] },
    ])
  })

  it('converge at several pages under hostile faults within one incremental run and its checks; status changes by the full run', async () => {
    const { upstream, db, url } = await startAtSeveralPages()
    const { crm } = upstream.control
    upstream.control.setFaults(FAULTS)
    const ids = (record: Upstream, key: string) =>
      Array.isArray(record[key]) ? (record[key] as unknown[]) : []
    const peopleOf = (record: Upstream) => ids(record, 'people').map((person) => (person as Upstream).id)
    const oldDeals = records(upstream, 'deals', newestFirst(upstream, 'deals').slice(UNREAD))
    const oldProjects = records(upstream, 'projects', newestFirst(upstream, 'projects').slice(UNREAD))
    const allTasks = records(upstream, 'tasks', crm.liveIds('tasks'))
    const allNotes = records(upstream, 'protocols', crm.liveIds('protocols'))
    const attached = (type: string) => (task: Upstream) =>
      task.attachable_type === type ? [task.attachable_id] : []

    // Companies first (people keep their count: no walk of theirs goes past its newest pages).
    const companyOrder = newestFirst(upstream, 'companies')
    const oldPeople = records(upstream, 'people', newestFirst(upstream, 'people').slice(UNREAD))
    const takenCompanies = new Set<number>()
    const companyLosers = losersNamedBy(
      [
        [
          'the position of a person on the last page',
          oldPeople,
          (person) => ids(person, 'positions').map((p) => (p as Upstream).company_id),
        ],
        ['a deal on the last page', oldDeals, (deal) => [deal.company_id]],
        ['a project on the last page', oldProjects, (project) => [project.company_id]],
        ['a task', allTasks, attached('Company')],
        ['a note', allNotes, (note) => ids(note, 'company_ids')],
      ],
      takenCompanies,
    )
    const companyWinners = [companyOrder[0], companyOrder[249], companyOrder.at(-1)].filter(
      (id): id is number => id !== undefined && !takenCompanies.has(id),
    )
    for (const [index, loser] of companyLosers.entries())
      crm.merge('companies', companyWinners[index % companyWinners.length] as number, [loser])
    const companiesMerged = await incrementalConverges(db, url, upstream, 'companies')
    expect(companiesMerged.run.resources.find((r) => r.resource === 'crm.people')?.pages).toBeLessThan(3)

    // Then people: a loser on the last page, at a page boundary, two merged into one winner at once.
    const personOrder = newestFirst(upstream, 'people')
    const takenPeople = new Set<number>()
    const personLosers = losersNamedBy(
      [
        ['a deal on the last page', oldDeals, peopleOf],
        ['a project on the last page', oldProjects, peopleOf],
        ['a task', records(upstream, 'tasks', crm.liveIds('tasks')), attached('Person')],
        [
          'a note',
          records(upstream, 'protocols', crm.liveIds('protocols')),
          (note) => ids(note, 'person_ids'),
        ],
        ['the last page', personOrder.slice(-5).map((id) => ({ id })), (person) => [person.id]],
      ],
      takenPeople,
    )
    const personWinners = [personOrder[0], personOrder[250], personOrder.at(-2)].filter(
      (id): id is number => id !== undefined && !takenPeople.has(id),
    )
    crm.merge('people', personWinners[0] as number, personLosers.slice(0, 2))
    for (const [index, loser] of personLosers.slice(2).entries())
      crm.merge('people', personWinners[(index + 1) % personWinners.length] as number, [loser])
    const peopleMerged = await incrementalConverges(db, url, upstream, 'people')
    expect(peopleMerged.run.resources.find((r) => r.resource === 'crm.people')).toMatchObject({
      status: 'succeeded',
      pages: 3,
      remote_count: SEED.people - personLosers.length,
    })

    // Status changes, silent by default (no updated_at, no webhook): past the newest pages, no incremental
    // run reads them; the full run does.
    const silent: string[] = []
    for (const collection of ['deals', 'projects'] as const) {
      const order = newestFirst(upstream, collection)
      for (const id of [order[UNREAD], order.at(-1)]) {
        const record = crm.get(collection, id as number)
        const [final, open] = collection === 'deals' ? ['won', 'open_25'] : ['closed', 'open']
        crm.changeStatus(collection, id as number, record?.current_state === final ? open : final)
        silent.push(`crm.${collection} ${id}: current_state differs`)
      }
    }
    await upstream.control.drainDeliveries()
    expect((await requestRun(db, url, { mode: 'incremental' }, 30_000)).status).toBe('succeeded')
    expect((await differences(db, upstream, { references: true })).sort()).toEqual(silent.sort())

    // What moved is under its winner, the losers are tombstoned (checked above); the full run brings the
    // status changes, and finds nothing else.
    const full = await requestRun(db, url, { mode: 'full' }, 60_000)
    expect(full.status).toBe('succeeded')
    expect(await differences(db, upstream, { references: true })).toEqual([])
    console.log(
      `merges at several pages: ${companyLosers.length} companies in sync ${companiesMerged.ms} after the incremental run was asked for, ${personLosers.length} people ${peopleMerged.ms}`,
    )
  }, 180_000)
})
