// The size of schema history that `crm-sync check` shows (inspectHistory) is right before autovacuum
// has analyzed the versions tables: right after a sync into tables never analyzed, and after one that
// wrote many more versions than the last ANALYZE saw.
import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/database.ts'
import { inspectHistory } from '../../src/store/history.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

beforeEach(async () => {
  // Truncated, a table has no statistics again (reltuples -1), as one just created by the migrations.
  await sql`truncate crm.users, reservations.tags, history.crm_users_versions, history.reservations_tags_versions`.execute(
    database.db,
  )
})

/** Writes users `from`..`to` as a sync would: the history triggers make one version each. */
async function syncUsers(db: Db, from: number, to: number, rawBytes = 200) {
  await sql`
    insert into crm.users (id, name, login, _raw, _source, _fetched_at)
    select g, 'User ' || g, 'user' || g || '@example.com',
      jsonb_build_object('id', g, 'bio', repeat(md5(g::text), ${Math.ceil(rawBytes / 32)})), 'fetch', now()
    from generate_series(${from}::int, ${to}::int) g`.execute(db)
}

async function syncTags(db: Db, count: number) {
  await sql`
    insert into reservations.tags (id, name, _raw, _source, _fetched_at)
    select g, 'tag ' || g, jsonb_build_object('id', g), 'fetch', now()
    from generate_series(1, ${count}::int) g`.execute(db)
}

/** The versions `check` says history holds: "about 26,000 versions in 9 MiB". */
async function shownVersions(db: Db): Promise<number> {
  const { state, detail } = await inspectHistory(db)
  expect(state, detail).toBe('current')
  const shown = /about ([\d,]+) versions in \d+ MiB/.exec(detail)?.[1]
  expect(shown, detail).toBeDefined()
  return Number(shown?.replaceAll(',', ''))
}

/** reltuples of the versions table (-1: never analyzed) and the pages it has now. */
async function statistics(db: Db, table: string) {
  const { rows } = await sql<{ tuples: number; pages: number }>`
    select reltuples::float8 as tuples, (pg_relation_size(oid) / 8192)::int as pages
    from pg_class where oid = ${`history.${table}`}::regclass`.execute(db)
  return rows[0]
}

describe('the size of history that check shows', () => {
  it('counts the versions of small tables just synced and never analyzed', async () => {
    const { db } = database
    await syncUsers(db, 1, 2_000)
    await syncTags(db, 600)
    expect(await statistics(db, 'crm_users_versions')).toMatchObject({ tuples: -1 }) // never analyzed
    expect(await shownVersions(db)).toBe(2_600)
  })

  it('estimates a large table never analyzed from a sample of its pages, near the truth', async () => {
    const { db } = database
    await syncUsers(db, 1, 26_000, 400)
    const { tuples, pages } = (await statistics(db, 'crm_users_versions')) ?? {}
    expect(tuples).toBe(-1)
    expect(pages).toBeGreaterThan(1_500) // more than the 1,000 read to count a table without statistics
    const shown = await shownVersions(db)
    expect(shown).toBeGreaterThan(26_000 * 0.9)
    expect(shown).toBeLessThan(26_000 * 1.1)
  })

  it('counts the versions written since the last ANALYZE', async () => {
    const { db } = database
    await syncUsers(db, 1, 200)
    await sql`analyze history.crm_users_versions`.execute(db)
    expect(await statistics(db, 'crm_users_versions')).toMatchObject({ tuples: 200 })
    await syncUsers(db, 201, 10_000)
    const shown = await shownVersions(db)
    expect(shown).toBeGreaterThan(10_000 * 0.9)
    expect(shown).toBeLessThan(10_000 * 1.1)
  })
})
