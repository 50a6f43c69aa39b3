// DESIGN.md's definition of "in sync", checked against the sandbox: the live rows are exactly the
// live upstream records, each with the upstream's latest updated_at and fields, each record's tags
// are its upstream tags, and every record mirrored and since deleted carries _deleted_at.
import { sql } from 'kysely'
import type { Sandbox } from '../../sandbox/index.ts'
import type { Db } from '../../src/store/database.ts'

const CRM = [
  { collection: 'people', table: 'crm.people', fields: ['name', 'first_name'], tags: true },
  { collection: 'companies', table: 'crm.companies', fields: ['name'], tags: true },
  { collection: 'deals', table: 'crm.deals', fields: ['name', 'current_state'], tags: true },
  { collection: 'projects', table: 'crm.projects', fields: ['name', 'current_state'], tags: true },
  { collection: 'tasks', table: 'crm.tasks', fields: ['name'], tags: false },
] as const
const RESERVATION = [
  { collection: 'contacts', table: 'reservations.contacts', fields: ['last', 'first'], tags: false },
  {
    collection: 'bookings',
    table: 'reservations.bookings',
    fields: ['status', 'number_guests'],
    tags: false,
  },
] as const

type Row = { id: number; updated_at: Date | null; _deleted_at: Date | null; [field: string]: unknown }

/** Differences between the mirror and the sandbox; empty when converged. At most `limit` are listed. */
export interface TruthOptions {
  reservation?: boolean
  limit?: number
}

export async function differences(db: Db, sandbox: Sandbox, options: TruthOptions = {}) {
  const found: string[] = []
  const limit = options.limit ?? 10
  const note = (text: string) => {
    if (found.length < limit) found.push(text)
  }
  const entries = [
    ...CRM.map((e) => ({ ...e, service: 'crm' as const })),
    ...(options.reservation ? RESERVATION.map((e) => ({ ...e, service: 'reservation' as const })) : []),
  ]
  for (const entry of entries) {
    const control = entry.service === 'crm' ? sandbox.control.crm : sandbox.control.reservation
    const { rows } = await sql<Row>`select * from ${sql.table(entry.table)}`.execute(db)
    const mirror = new Map(rows.map((row) => [Number(row.id), row]))
    const live = (control.liveIds as (c: string) => number[])(entry.collection)
    const liveSet = new Set(live)
    for (const id of live) {
      const truth = (control.get as (c: string, id: number) => Record<string, unknown> | undefined)(
        entry.collection,
        id,
      )
      const row = mirror.get(id)
      if (!truth) continue
      if (!row || row._deleted_at) {
        note(`${entry.table} ${id}: live upstream, ${row ? 'tombstoned' : 'missing'} in the mirror`)
        continue
      }
      if (row.updated_at?.getTime() !== Date.parse(String(truth.updated_at))) {
        note(`${entry.table} ${id}: updated_at ${row.updated_at?.toISOString()} != ${truth.updated_at}`)
      }
      for (const field of entry.fields) {
        if (String(row[field] ?? '') !== String(truth[field] ?? ''))
          note(`${entry.table} ${id}: ${field} differs`)
      }
    }
    for (const [id, row] of mirror) {
      if (!row._deleted_at && !liveSet.has(id))
        note(`${entry.table} ${id}: live in the mirror, deleted upstream`)
    }
    if (entry.tags) {
      const { rows: tagRows } = await sql<{ parent: number; names: string }>`
        select _parent_id as parent, string_agg(name, '\u0001') as names from crm.tags
        where _parent_resource = ${entry.table} group by _parent_id`.execute(db)
      const mirrorTags = new Map(
        tagRows.map((row) => [Number(row.parent), row.names.split('\u0001').sort().join(',')]),
      )
      for (const id of live) {
        const truth = control.get(entry.collection as never, id) as { tags?: { name: string }[] } | undefined
        const expected = (truth?.tags ?? [])
          .map((tag) => tag.name)
          .sort()
          .join(',')
        if ((mirrorTags.get(id) ?? '') !== expected)
          note(`${entry.table} ${id}: tags "${mirrorTags.get(id) ?? ''}" != "${expected}"`)
      }
    }
  }
  return found
}
