// Keeps the store's reverse indexes in step with what each row refers to: positions to companies,
// deals and projects to their people and company, tasks to what they are attached to, notes to what
// they are linked to, bookings to their contact. Destroys then find their dependants without scanning
// a collection.
import type { BookingRow } from './reservation-rows.ts'
import { NOTE_LINKS, type NoteRow, type PersonRow, type Stamped, type TaskRow, type WorkRow } from './rows.ts'
import { link, type Store, unlink } from './store.ts'

type Reference = [index: Map<number, Set<number>>, key: number]

function referencesOf(store: Store, collection: string, row: Stamped): Reference[] {
  switch (collection) {
    case 'people':
      return ((row as PersonRow).positions ?? []).flatMap((position): Reference[] =>
        position.company_id ? [[store.staff, position.company_id]] : [],
      )
    case 'deals':
    case 'projects': {
      const work = row as WorkRow
      const deal = collection === 'deals'
      const people = (work.person_ids ?? []).map(
        (personId): Reference => [deal ? store.dealsOfPerson : store.projectsOfPerson, personId],
      )
      if (work.company_id === null) return people
      return [...people, [deal ? store.dealsOfCompany : store.projectsOfCompany, work.company_id]]
    }
    case 'tasks': {
      const task = row as TaskRow
      if (task.attachable_type === null || task.attachable_id === null) return []
      return [[store.tasksOf[task.attachable_type], task.attachable_id]]
    }
    case 'protocols': {
      const note = row as NoteRow
      return NOTE_LINKS.flatMap(({ key, type }) =>
        note[key].map((linkedId): Reference => [store.notesOf[type], linkedId]),
      )
    }
    case 'bookings':
      return [[store.bookingsOfContact, (row as BookingRow).contact_id]]
    default:
      return []
  }
}

export function linkReferences(store: Store, collection: string, row: Stamped): void {
  for (const [index, key] of referencesOf(store, collection, row)) link(index, key, row.id)
}

export function unlinkReferences(store: Store, collection: string, row: Stamped): void {
  for (const [index, key] of referencesOf(store, collection, row)) unlink(index, key, row.id)
}

/** Runs a change to a row and moves its index entries along with what it now refers to. */
export function relinking<T>(store: Store, collection: string, row: Stamped, change: () => T): T {
  unlinkReferences(store, collection, row)
  try {
    return change()
  } finally {
    linkReferences(store, collection, row)
  }
}
