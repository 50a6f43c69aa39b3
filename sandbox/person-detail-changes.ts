// Changes to a person's historic events and assistants (person-details.ts), whoever makes them (an API
// client on their routes, or the control API playing a user of the upstream's UI). Silent by default:
// the person keeps its `updated_at` and sends no webhook, as the spec tells of neither; with
// `detailChangesTouchPerson` the person changes as an update changes it (crm-account.ts, `touch`).
import type { CrmAccount } from './crm-account.ts'
import { type FieldErrors, fieldErrors } from './http.ts'
import type { Actor, WriteContext } from './kind.ts'
import {
  DETAIL_INPUTS,
  DETAIL_LISTS,
  type DetailEntry,
  type DetailItem,
  type DetailList,
  itemsOf,
  mergeDetailItems,
  removeDetailItem,
  renderDetailItem,
} from './person-details.ts'
import type { Random } from './random.ts'
import type { PersonRow, Reachable } from './rows.ts'
import { assiFields, eventFields } from './seed-person-details.ts'

export type DetailOutcome = { ok: true; item: Record<string, unknown> } | { ok: false; errors: FieldErrors }

/** What a random change did: to which list, what, and the item's id. */
export interface DetailChange {
  list: DetailList
  change: 'added' | 'changed' | 'removed'
  id: number
}

/** The person's items of a list as its route shows them, in order; null when there is no such person. */
export function listDetails(
  account: CrmAccount,
  personId: number,
  list: DetailList,
): Record<string, unknown>[] | null {
  const row = account.view.store.people.rows.get(personId)
  return row ? itemsOf(row, list).map((item) => renderDetailItem(account.view, list, item)) : null
}

/** A change to one person's items; null when there is no such person. */
function changePerson<T>(
  account: CrmAccount,
  personId: number,
  actor: Actor,
  change: (row: PersonRow, write: WriteContext) => T | null,
): { changed: T | null } | null {
  // A row of people is a PersonRow: the account hands it over as any contact's.
  const edit = (row: Reachable, write: WriteContext) => change(row as PersonRow, write)
  return account.changeContact('people', personId, edit, actor, 'detailChangesTouchPerson')
}

/** The input as an entry (its id dropped), or the field errors that refuse it. */
function entryOf(input: unknown, list: DetailList): { entry: DetailEntry } | { errors: FieldErrors } {
  const parsed = DETAIL_INPUTS[list].safeParse(input)
  if (!parsed.success) return { errors: fieldErrors(parsed.error, input) }
  return { entry: { ...parsed.data, id: undefined } }
}

/** A new item at the end of the list. Null when there is no such person. */
export function addDetail(
  account: CrmAccount,
  personId: number,
  list: DetailList,
  input: unknown,
  actor: Actor,
): DetailOutcome | null {
  if (!account.view.store.people.rows.has(personId)) return null
  const read = entryOf(input, list)
  if ('errors' in read) return { ok: false, errors: read.errors }
  const add = (row: PersonRow, write: WriteContext) => mergeDetailItems(row, list, [read.entry], write)
  const done = changePerson(account, personId, actor, add)
  const item = done?.changed?.[0]
  return item ? { ok: true, item: renderDetailItem(account.view, list, item) } : null
}

/** The fields given changed on the item. Null when there is no such person or item. */
export function updateDetail(
  account: CrmAccount,
  personId: number,
  list: DetailList,
  itemId: number,
  input: unknown,
  actor: Actor,
): DetailOutcome | null {
  const row = account.view.store.people.rows.get(personId)
  if (!row || !itemsOf(row, list).some((item) => item.id === itemId)) return null
  const read = entryOf(input, list)
  if ('errors' in read) return { ok: false, errors: read.errors }
  const entry = { ...read.entry, id: itemId }
  const edit = (row: PersonRow, write: WriteContext) => mergeDetailItems(row, list, [entry], write)
  const done = changePerson(account, personId, actor, edit)
  const item = done?.changed?.[0]
  return item ? { ok: true, item: renderDetailItem(account.view, list, item) } : null
}

/** Null when there is no such person or item. */
export function removeDetail(
  account: CrmAccount,
  personId: number,
  list: DetailList,
  itemId: number,
  actor: Actor,
): true | null {
  const done = changePerson(account, personId, actor, (row) => removeDetailItem(row, list, itemId))
  return done?.changed ? true : null
}

/**
 * One change a user might make to a person's historic events or assistants, drawn from `random`: an
 * item added (always, to a list that has none), one changed, or one removed. Null when there is no
 * such person.
 */
export function changeDetailsAtRandom(
  account: CrmAccount,
  personId: number,
  random: Random,
  actor: Actor,
): DetailChange | null {
  const done = changePerson(account, personId, actor, (row, write): DetailChange | null => {
    const list = random.pick(DETAIL_LISTS)
    const items = itemsOf(row, list)
    const roll = items.length === 0 ? 0 : random.int(0, 2)
    const fields = (): DetailEntry =>
      list === 'historic_events' ? eventFields(random, random.chance(0.5)) : assiFields(random)
    if (roll === 0) {
      const [added] = mergeDetailItems(row, list, [fields()], write)
      return added ? { list, change: 'added', id: added.id } : null
    }
    const item = random.pick(items)
    if (roll === 2) {
      removeDetailItem(row, list, item.id)
      return { list, change: 'removed', id: item.id }
    }
    mergeDetailItems(row, list, [{ ...differentField(item, fields, random), id: item.id }], write)
    return { list, change: 'changed', id: item.id }
  })
  return done?.changed ?? null
}

/**
 * One of the fields of new values that differ from the item's, drawn again until one does (a few
 * times: a source that repeats itself may never give one; then the last values, whole).
 */
function differentField(item: DetailItem, fields: () => DetailEntry, random: Random): DetailEntry {
  const current = item as unknown as DetailEntry
  let drawn = fields()
  for (let attempt = 0; attempt < 20; attempt++, drawn = fields()) {
    const differing = Object.entries(drawn).filter(([name, given]) => given !== current[name])
    if (differing.length === 0) continue
    const [field, value] = random.pick(differing)
    return { [field]: value }
  }
  return drawn
}
