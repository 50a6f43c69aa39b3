// The comparison of crm.historic_events and crm.assistants with the sandbox (`details: true`), against
// tables this test makes itself in an empty database (the engine's own come with its migration):
// filled from the sandbox's truth, they are in sync; one item changed upstream is exactly one difference.
import { sql } from 'kysely'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { compareMirror, converged, describe as describeTables } from '../../sandbox/mirror-truth.ts'
import type { Db } from '../../src/store/database.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { harness } from './helpers.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase({ empty: true })
  const engineColumns = `_parent_resource text not null, _parent_id bigint not null, _ordinal integer not null`
  for (const statement of [
    'create schema crm',
    'create table crm.people (id bigint primary key, _deleted_at timestamptz)',
    `create table crm.historic_events (${engineColumns}, id bigint, unparsed_date text, atype text,
      description text, _raw jsonb not null, primary key (_parent_resource, _parent_id, _ordinal))`,
    `create table crm.assistants (${engineColumns}, id bigint, name text, tel text, email text,
      _raw jsonb not null, primary key (_parent_resource, _parent_id, _ordinal))`,
  ])
    await sql.raw(statement).execute(database.db)
})
beforeEach(async () => {
  await sql`truncate crm.people, crm.historic_events, crm.assistants`.execute(database.db)
})
afterAll(async () => {
  if (database) await dropTestDatabase(database)
})

type Details = { historic_events: Record<string, unknown>[]; assis: Record<string, unknown>[] }

/** The mirror as the engine would write it: each live person, and its items at their places. */
async function mirror(db: Db, people: Map<number, Details>): Promise<void> {
  for (const [id, details] of people) {
    await sql`insert into crm.people (id) values (${id})`.execute(db)
    for (const [ordinal, item] of details.historic_events.entries())
      await sql`insert into crm.historic_events values ('crm.people', ${id}, ${ordinal}, ${item.id},
        ${item.unparsed_date}, ${item.atype}, ${item.desc}, ${JSON.stringify(item)})`.execute(db)
    for (const [ordinal, item] of details.assis.entries())
      await sql`insert into crm.assistants values ('crm.people', ${id}, ${ordinal}, ${item.id},
        ${item.name}, ${item.tel}, ${item.email}, ${JSON.stringify(item)})`.execute(db)
  }
}

describe('comparing historic events and assistants with the sandbox', () => {
  it('finds none when the tables hold the truth, and exactly the item changed upstream after', async () => {
    const h = await harness({ seedSize: { people: 300 } })
    const { crm } = h.sandbox.control
    const people = new Map(crm.liveIds('people').map((id) => [id, crm.personDetails(id) as Details]))
    await mirror(database.db, people)
    const compare = () => compareMirror(database.db, h.sandbox, { include: () => false, details: true })

    const before = await compare()
    expect(describeTables(before)).toEqual([])
    expect(converged(before)).toBe(true)
    expect(before.map((table) => [table.table, table.upstream])).toEqual([
      ['crm.historic_events', 300],
      ['crm.assistants', 300],
    ])

    const [personId, details] = [...people].find(([, d]) => d.historic_events.length >= 2) as [
      number,
      Details,
    ]
    const item = details.historic_events[1] as { id: number; unparsed_date: string }
    crm.updatePersonDetail(personId, 'historic_events', item.id, { unparsed_date: '29.02.' })
    const after = await compare()
    expect(describeTables(after)).toEqual([
      `crm.historic_events ${personId}: item 1 (id ${item.id}): unparsed_date "${item.unparsed_date}" != "29.02."`,
    ])
    expect(converged(after)).toBe(false)
  })

  it('tells of items added or removed upstream, and leaves out people the mirror has deleted', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const kept = crm.create('people', { name: 'Mustermann' })
    const tombstoned = crm.create('people', { name: 'Musterfrau' })
    const assi = crm.addPersonDetail(kept.id, 'assis', { name: 'Eva Engel' })
    await mirror(
      database.db,
      new Map([kept, tombstoned].map((p) => [p.id, crm.personDetails(p.id) as Details])),
    )
    await sql`update crm.people set _deleted_at = now() where id = ${tombstoned.id}`.execute(database.db)
    crm.addPersonDetail(tombstoned.id, 'assis', { name: 'Olaf' })
    crm.addPersonDetail(kept.id, 'historic_events', { unparsed_date: '12.03.', atype: 'birthday' })
    crm.removePersonDetail(kept.id, 'assis', assi.id)

    const tables = await compareMirror(database.db, h.sandbox, { include: () => false, details: true })
    expect(describeTables(tables)).toEqual([
      `crm.historic_events ${kept.id}: items 0 != 1`,
      `crm.assistants ${kept.id}: items 1 != 0`,
    ])
    expect(await compareMirror(database.db, h.sandbox, { include: () => false })).toEqual([])
  })
})
