// History end to end: people change, are created and deleted in the simulator over several seconds while
// crm-sync runs (webhooks, refreshes, its first sweep); afterwards history.crm_people_as_of(t) is the
// simulator's state at each instant t noted on the way (live people with their fields and updated_at,
// and the deleted ones as tombstones), and a full resync rewrites every record without adding a version.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import type { Db } from '../../src/store/database.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { differences } from '../support/truth.ts'

const rig = useEngineRig()

const ADMIN_TOKEN = 'history-admin-token-0123456789'

interface PersonState {
  id: number
  name: string | null
  first_name: string | null
  background: string | null
  updated_at: number
}

interface State {
  live: PersonState[]
  deleted: number[]
}

/** The simulator's people now: live ones with their fields, and the ids deleted. */
function simulatorState(upstream: Sandbox): State {
  const { crm } = upstream.control
  const live = crm.liveIds('people').map((id) => {
    const person = crm.get('people', id) as Record<string, unknown>
    return {
      id,
      name: (person.name as string | null) ?? null,
      first_name: (person.first_name as string | null) ?? null,
      background: (person.background as string | null) ?? null,
      updated_at: Date.parse(String(person.updated_at)),
    }
  })
  return { live: live.sort((a, b) => a.id - b.id), deleted: crm.deletedIds('people').sort((a, b) => a - b) }
}

/** history.crm_people_as_of(t) in the same shape. */
async function asOf(db: Db, time: Date): Promise<State> {
  const { rows } = await sql<PersonState & { updated_at: Date; _deleted_at: Date | null }>`
    select id, name, first_name, background, updated_at, _deleted_at
    from history.crm_people_as_of(${time.toISOString()}::timestamptz) order by id`.execute(db)
  return {
    live: rows
      .filter((row) => row._deleted_at === null)
      .map((row) => ({
        id: row.id,
        name: row.name,
        first_name: row.first_name,
        background: row.background,
        updated_at: row.updated_at.getTime(),
      })),
    deleted: rows.filter((row) => row._deleted_at !== null).map((row) => row.id),
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Until `ms` past the next whole second: the upstream's timestamps have whole seconds. */
const nextSecond = (ms = 100) => sleep(1000 - (Date.now() % 1000) + ms)

async function versionCount(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from history.crm_people`.execute(db)
  return rows[0]?.n ?? 0
}

describe('history.crm_people_as_of', () => {
  it("equals the simulator's state at several instants, tombstones included; a full resync adds no version", async () => {
    const upstream = await startSandbox({
      seedSize: { people: 8 },
      seed: 11,
      behaviour: { crmRateLimit: null },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const engine = rig.engine(
      await startEngine(upstream, database.url, {
        ADMIN_TOKEN,
        INCREMENTAL_SYNC_INTERVAL: '3600',
        CRM_RATE_LIMIT: '1000',
        REFRESH_QUIET_MS: '0',
      }),
    )
    const inSync = async () => {
      await upstream.control.drainDeliveries()
      expect(await differences(db, upstream, { only: ['crm.people'] })).toEqual([])
      return true
    }
    await waitFor(inSync, 60_000, 'the first sync')

    // Instants and the simulator's state at each: once the mirror caught up with a round of changes,
    // and again in a later second before the next round (nothing changed in between).
    const noted: { at: Date; state: State }[] = []
    const note = () => noted.push({ at: new Date(), state: simulatorState(upstream) })
    note()
    const { crm } = upstream.control
    for (let round = 1; round <= 3; round++) {
      await nextSecond()
      note()
      await nextSecond()
      const [first, second, third] = crm.liveIds('people') as [number, number, number]
      crm.update('people', first, { name: `Runde ${round}` })
      crm.update('people', second, { background: `changed in round ${round}`, first_name: `R${round}` })
      crm.destroy('people', third)
      crm.create('people', { name: `Neu ${round}`, first_name: 'Nina' })
      if (round === 2) crm.update('people', first, { name: 'twice in one second' })
      await waitFor(inSync, 30_000, `round ${round} in the mirror`)
      note()
    }
    // The rounds were seen: three deletions, six changes and three new people since the start.
    const start = noted[0]?.state as State
    const end = noted.at(-1)?.state as State
    expect(end.deleted.length - start.deleted.length).toBe(3)
    expect(end.live.filter((person) => !start.live.some((p) => p.id === person.id))).toHaveLength(3)

    const check = async () => {
      for (const { at, state } of noted) expect(await asOf(db, at), at.toISOString()).toEqual(state)
    }
    await check()
    // Before the first version of the people created in round 1, they were not there.
    const firstNew = end.live.find((person) => !start.live.some((p) => p.id === person.id)) as PersonState
    expect((await asOf(db, new Date(firstNew.updated_at - 1))).live.map((p) => p.id)).not.toContain(
      firstNew.id,
    )

    // A full resync writes every record again (engine columns only): no version is added.
    const versions = await versionCount(db)
    const { rows: before } = await sql<{ n: number }>`
      select sum(_version)::int as n from crm.people`.execute(db)
    const response = await fetch(`${engine.publicUrl}/admin/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'full' }),
    })
    expect(response.status).toBe(202)
    const { run_id: runId } = (await response.json()) as { run_id: number }
    const status = await waitFor(
      async () => {
        const { rows } = await sql<{ status: string }>`
          select status from sync.runs where id = ${runId} and finished_at is not null`.execute(db)
        return rows[0]?.status
      },
      60_000,
      'the full resync',
    )
    expect(status).toBe('succeeded')
    const { rows: after } = await sql<{ n: number }>`select sum(_version)::int as n from crm.people`.execute(
      db,
    )
    expect(after[0]?.n).toBeGreaterThan(before[0]?.n ?? 0)
    expect(await versionCount(db)).toBe(versions)
    await check()
  }, 120_000)
})
