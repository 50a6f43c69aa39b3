// The sandbox's ground truth, in memory: a collection of rows (rows.ts) per resource, and the
// reverse indexes between them. Plain objects in Maps keep 200,000 people within a benchmark's memory.
import type { BookingRow, ContactRow, ReservationTagRow, WebformRow } from './reservation-rows.ts'
import {
  ATTACHABLE_TYPES,
  type AttachableType,
  type HookRow,
  type KindRows,
  type Plural,
  type UserRow,
} from './rows.ts'

export interface Collection<R extends { id: number }> {
  readonly rows: Map<number, R>
  /** Id → when it was deleted (seconds): the ground truth of deletions. */
  readonly deleted: Map<number, number>
  /** Bumped on every change, so cached sort orders know when they are stale. */
  version: number
}

export function collection<R extends { id: number }>(): Collection<R> {
  return { rows: new Map(), deleted: new Map(), version: 0 }
}

export function insert<R extends { id: number }>(into: Collection<R>, row: R): R {
  into.rows.set(row.id, row)
  into.version++
  return row
}

export function changed(of: Collection<{ id: number }>): void {
  of.version++
}

export function remove(from: Collection<{ id: number }>, id: number, at: number): void {
  from.rows.delete(id)
  from.deleted.set(id, at)
  from.version++
}

/** A collection per entry of the table of kinds (kinds.ts), under its plural. */
export type KindCollections = { [P in Plural]: Collection<KindRows[P]> }

export interface Store extends KindCollections {
  users: Collection<UserRow>
  hooks: Collection<HookRow>
  contacts: Collection<ContactRow>
  bookings: Collection<BookingRow>
  tags: Collection<ReservationTagRow>
  webforms: Collection<WebformRow>
  // Reverse indexes (see relations.ts): who points at a record, so a destroy finds its dependants.
  /** Company id → ids of the people with a position there (also the companies' `positions` include). */
  staff: Map<number, Set<number>>
  /** Person id → deals and projects that name them among their people. */
  dealsOfPerson: Map<number, Set<number>>
  projectsOfPerson: Map<number, Set<number>>
  /** Company id → its deals and projects. */
  dealsOfCompany: Map<number, Set<number>>
  projectsOfCompany: Map<number, Set<number>>
  /** Attachable type → record id → its tasks. */
  tasksOf: Record<AttachableType, Map<number, Set<number>>>
  /** Attachable type → record id → the notes linked to it. */
  notesOf: Record<AttachableType, Map<number, Set<number>>>
  /** Contact id → ids of its bookings. */
  bookingsOfContact: Map<number, Set<number>>
  /** Contact id → ids of its tags, in the order they were added; and tag id → the contacts carrying it. */
  tagsOfContact: Map<number, Set<number>>
  contactsOfTag: Map<number, Set<number>>
}

/** `plurals`: those of the table of kinds (kinds.ts), which lies above the store: the caller's. */
export function createStore(plurals: readonly Plural[]): Store {
  const kinds = Object.fromEntries(plurals.map((plural) => [plural, collection()])) as KindCollections
  return {
    ...kinds,
    users: collection(),
    hooks: collection(),
    contacts: collection(),
    bookings: collection(),
    tags: collection(),
    webforms: collection(),
    staff: new Map(),
    dealsOfPerson: new Map(),
    projectsOfPerson: new Map(),
    dealsOfCompany: new Map(),
    projectsOfCompany: new Map(),
    tasksOf: Object.fromEntries(ATTACHABLE_TYPES.map((type) => [type, new Map()])) as Store['tasksOf'],
    notesOf: Object.fromEntries(ATTACHABLE_TYPES.map((type) => [type, new Map()])) as Store['notesOf'],
    bookingsOfContact: new Map(),
    tagsOfContact: new Map(),
    contactsOfTag: new Map(),
  }
}

export function link(index: Map<number, Set<number>>, key: number, id: number): void {
  let members = index.get(key)
  if (!members) {
    members = new Set()
    index.set(key, members)
  }
  members.add(id)
}

export function unlink(index: Map<number, Set<number>>, key: number, id: number): void {
  const members = index.get(key)
  members?.delete(id)
  if (members?.size === 0) index.delete(key)
}
