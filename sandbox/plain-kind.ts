// A CRM kind built from its entry in the resource table, for a resource the CRM lists but nothing
// else in the simulator acts on (reference data): rows hold the entry's columns under their upstream
// keys (timestamps as seconds), responses show exactly those columns, writes take any of them, and
// seeding makes `count` records named after the wrapper.
import { z } from 'zod'
import type { Resource } from '../src/resources/index.ts'
import { assignGiven, contains, flag, invalid, type Kind } from './kind.ts'
import type { PlainRow, Plural } from './rows.ts'
import { insert } from './store.ts'
import { stamp } from './view.ts'

const SET_BY_THE_SERVICE = new Set(['id', 'account_id', 'created_at', 'updated_at'])

export function plainKind(resource: Resource): Kind<PlainRow> {
  const plural = resource.path as Plural
  const wrapper = resource.wrapper ?? resource.path
  const columns = Object.entries(resource.columns).map(([name, column]) => ({
    key: column.from ?? name,
    type: column.type,
  }))
  const fields = Object.fromEntries(
    columns
      .filter((column) => !SET_BY_THE_SERVICE.has(column.key))
      .map((column) => {
        if (column.type === 'text') return [column.key, z.string().nullable().optional()]
        if (column.type === 'bigint' || column.type === 'integer')
          return [column.key, z.number().int().nullable().optional()]
        if (column.type === 'boolean') return [column.key, flag.nullable().optional()]
        return [column.key, z.unknown().optional()]
      }),
  )
  const input = z.object(fields)
  const name = (row: PlainRow) => String(row.name ?? '')
  const kind: Kind<PlainRow> = {
    plural,
    wrapper,
    model: resource.webhookModel as Kind['model'],
    attachableType: null,
    includeOptions: resource.includes,
    rows: (store) => store[plural] as never,
    sortName: name,
    searchRequires: 'name',
    matches: (row, query) => contains(name(row), query('name') ?? ''),
    render(view, row) {
      const record: Record<string, unknown> = {}
      for (const column of columns) {
        const value = row[column.key] ?? null
        record[column.key] =
          column.key === 'account_id'
            ? view.accountId
            : column.type === 'timestamptz'
              ? stamp(view, value as number | null)
              : value
      }
      return record
    },
    flat: (view, row) => kind.render(view, row, new Set()),
    create(data, context) {
      const parsed = input.safeParse(data)
      if (!parsed.success) return invalid(parsed.error, data)
      const { now } = context
      const row: PlainRow = {
        ...parsed.data,
        id: context.ids.next(wrapper),
        created_at: now,
        updated_at: now,
      }
      return { ok: true, row }
    },
    update(row, data, context) {
      const parsed = input.safeParse(data)
      if (!parsed.success) return invalid(parsed.error, data)
      assignGiven(row, parsed.data as Partial<PlainRow>)
      row.updated_at = context.now
      return { ok: true, row }
    },
    seed({ store, ids, time, count }) {
      const label = wrapper.charAt(0).toUpperCase() + wrapper.slice(1).replaceAll('_', ' ')
      for (let i = 0; i < count(plural); i++) {
        const created_at = time.created()
        const row: PlainRow = { id: ids.next(wrapper), created_at, updated_at: time.updated(created_at) }
        if (columns.some((column) => column.key === 'name')) row.name = `${label} ${i + 1}`
        insert(kind.rows(store), row)
      }
    },
  }
  return kind
}
