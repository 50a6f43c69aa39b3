// How close the mirror is to the sandbox, per table: how many live upstream records have a live row
// with the same `updated_at` (in sync), and how many rows are live in the mirror though deleted
// upstream. The demo has converged when every table is fully in sync. Read-only queries a reporting
// user could run too; the engine's own SQL stays in src/store.
import { sql } from 'kysely'
import type { Sandbox } from '../sandbox/index.ts'
import type { Db } from '../src/store/database.ts'

type Upstream = { liveIds(collection: string): number[]; get(collection: string, id: number): unknown }

/** The tables the demo follows: every mirrored resource the sandbox can tell the truth about. */
export const TRACKED = [
  { table: 'crm.people', service: 'crm', collection: 'people' },
  { table: 'crm.companies', service: 'crm', collection: 'companies' },
  { table: 'crm.deals', service: 'crm', collection: 'deals' },
  { table: 'crm.projects', service: 'crm', collection: 'projects' },
  { table: 'crm.tasks', service: 'crm', collection: 'tasks' },
  { table: 'reservations.contacts', service: 'reservation', collection: 'contacts' },
  { table: 'reservations.bookings', service: 'reservation', collection: 'bookings' },
] as const

export interface TableSync {
  table: string
  /** Live records upstream. */
  upstream: number
  /** Of them, those with a live row of the same `updated_at`. */
  inSync: number
  /** Rows live in the mirror whose record is gone upstream. */
  stale: number
  /** A few ids that differ, for a report when the demo does not converge. */
  examples: number[]
}

async function liveRows(db: Db, table: string): Promise<Map<number, number>> {
  const { rows } = await sql<{ id: number; updated_at: Date | null }>`
    select id, updated_at from ${sql.table(table)} where _deleted_at is null
  `.execute(db)
  return new Map(rows.map((row) => [Number(row.id), row.updated_at?.getTime() ?? 0]))
}

export async function compareMirror(db: Db, sandbox: Sandbox): Promise<TableSync[]> {
  return Promise.all(
    TRACKED.map(async ({ table, service, collection }) => {
      const upstream = sandbox.control[service] as unknown as Upstream
      const mirror = await liveRows(db, table)
      const live = upstream.liveIds(collection)
      const examples: number[] = []
      let inSync = 0
      for (const id of live) {
        const record = upstream.get(collection, id) as { updated_at?: string } | undefined
        if (mirror.get(id) === Date.parse(String(record?.updated_at))) inSync++
        else if (examples.length < 5) examples.push(id)
      }
      const liveSet = new Set(live)
      const stale = [...mirror.keys()].filter((id) => !liveSet.has(id))
      examples.push(...stale.slice(0, 5))
      return { table, upstream: live.length, inSync, stale: stale.length, examples }
    }),
  )
}

export function converged(tables: TableSync[]): boolean {
  return tables.every((table) => table.inSync === table.upstream && table.stale === 0)
}
