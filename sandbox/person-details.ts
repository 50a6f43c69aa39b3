// A person's historic events (birthdays and the like) and assistants (`assis`): no include carries
// them, and no index or show of people; they are read on their own routes
// (`people/{id}/historic_events`, `people/{id}/assis`: crm-person-detail-routes.ts) and written there
// or with a person's nested attributes (`historic_events_attributes`, `assis_attributes`). The spec
// names their fields; their types, limits and the items' shape on the routes are not shown: the
// sandbox shows the named fields and the item's stamps. Their changes to the account are in
// person-detail-changes.ts.
import { z } from 'zod'
import { nested } from './children.ts'
import { id, type WriteContext } from './kind.ts'
import type { AssiRow, HistoricEventRow, PersonRow } from './rows.ts'
import type { View } from './view.ts'

/** The two lists, by the key of the person's row and of their route. */
export const DETAIL_LISTS = ['historic_events', 'assis'] as const
export type DetailList = (typeof DETAIL_LISTS)[number]

/** The key an item is wrapped under in answers and request bodies; also the kind of its id. */
export const DETAIL_WRAPPERS = { historic_events: 'historic_event', assis: 'assi' } as const

const value = z.string().nullable().optional()
const eventEntry = z.object({ id: id.optional(), unparsed_date: value, atype: value, desc: value })
const assiEntry = z.object({ id: id.optional(), name: value, tel: value, email: value })
export const DETAIL_INPUTS = { historic_events: eventEntry, assis: assiEntry } as const

/** The nested attributes of a person's create and update (people.ts). */
export const personDetailAttributes = {
  historic_events_attributes: nested(eventEntry).optional(),
  assis_attributes: nested(assiEntry).optional(),
}

/** An entry of nested attributes or a route's body: the id of an item to change, and fields. */
export type DetailEntry = { id?: number; [field: string]: string | number | null | undefined }
export type DetailItem = HistoricEventRow | AssiRow

/** The fields of an item beyond its id and stamps, in the order answers show them. */
const FIELDS = {
  historic_events: ['unparsed_date', 'atype', 'desc'],
  assis: ['name', 'tel', 'email'],
} as const satisfies Record<DetailList, readonly string[]>

/** The person's items of a list, in their order (empty when it has none). */
export function itemsOf(row: PersonRow, list: DetailList): readonly DetailItem[] {
  return row[list] ?? []
}

/**
 * Applies entries to a list: an entry with the id of one of its items changes the fields it gives;
 * any other is added at the end, with a new id. The items changed or added.
 */
export function mergeDetailItems(
  row: PersonRow,
  list: DetailList,
  entries: readonly DetailEntry[],
  context: WriteContext,
): DetailItem[] {
  const items: DetailItem[] = [...itemsOf(row, list)]
  const touched: DetailItem[] = []
  for (const entry of entries) {
    const existing = entry.id ? items.find((item) => item.id === entry.id) : undefined
    const item = (existing as unknown as Record<string, unknown> | undefined) ?? {
      id: context.ids.next(DETAIL_WRAPPERS[list]),
      ...Object.fromEntries(FIELDS[list].map((field) => [field, null])),
      created_at: context.now,
    }
    for (const field of FIELDS[list]) {
      const given = entry[field]
      if (given !== undefined) item[field] = given
    }
    item.updated_at = context.now
    if (!existing) items.push(item as unknown as DetailItem)
    touched.push(item as unknown as DetailItem)
  }
  setItems(row, list, items)
  return touched
}

/** The item removed from its list; null when the list has no item of that id. */
export function removeDetailItem(row: PersonRow, list: DetailList, itemId: number): DetailItem | null {
  const items = [...itemsOf(row, list)]
  const index = items.findIndex((item) => item.id === itemId)
  if (index < 0) return null
  const [removed] = items.splice(index, 1)
  setItems(row, list, items)
  return removed ?? null
}

/** The items of `from` appended to those of `to`, each list in order (a merge: merges.ts). */
export function moveDetailItems(from: PersonRow, to: PersonRow): void {
  for (const list of DETAIL_LISTS) {
    const moved = itemsOf(from, list)
    if (moved.length) setItems(to, list, [...itemsOf(to, list), ...moved])
    setItems(from, list, [])
  }
}

function setItems(row: PersonRow, list: DetailList, items: DetailItem[]): void {
  if (list === 'historic_events') row.historic_events = items as HistoricEventRow[]
  else row.assis = items as AssiRow[]
}

/** An item as its route shows it, unwrapped: its id, its fields, its stamps. */
export function renderDetailItem(view: View, list: DetailList, item: DetailItem): Record<string, unknown> {
  const record: Record<string, unknown> = { id: item.id }
  for (const field of FIELDS[list])
    record[field] = (item as unknown as Record<string, unknown>)[field] ?? null
  record.created_at = view.time(item.created_at)
  record.updated_at = view.time(item.updated_at)
  return record
}
