// Merges of people or companies (`POST /api/<people|companies>/{id}/merge?looser_ids=…`), simulated
// the least helpful way the facts allow: the losers vanish without a webhook or an activity, and what
// was theirs moves to the winner without touching those records' `updated_at`: their tasks, the notes
// linked to them, their memberships (a person among a deal's or project's people and their
// positions; a company's positions, which are its people's, and its deals and projects), and a
// person's historic events and assistants, appended to the winner's own in their order. Only the
// winner changes as any record does (the account bumps it and sends its update: crm-account.ts).
// Which of the records' own values survive is not shown: the winner's do. Attachments, connections and
// activities that name a loser are left as they are, as a destroy leaves them.
import { moveDetailItems } from './person-details.ts'
import { relinking, unlinkReferences } from './relations.ts'
import { type AttachableType, NOTE_LINKS, type PersonRow, type Stamped, type WorkRow } from './rows.ts'
import { changed, remove, type Store } from './store.ts'

export type Mergeable = 'people' | 'companies'

/** `ids` with `from` replaced by `to`, each id once (at its first place). */
function replaced(ids: readonly number[], from: number, to: number): number[] {
  const swapped = ids.map((id) => (id === from ? to : id))
  return swapped.filter((id, index) => swapped.indexOf(id) === index)
}

/** Moves what refers to `loserId` (as an attachable of `type`) to `winnerId`: tasks and notes. */
function moveAttached(store: Store, type: AttachableType, loserId: number, winnerId: number): void {
  for (const taskId of [...(store.tasksOf[type].get(loserId) ?? [])]) {
    const task = store.tasks.rows.get(taskId)
    if (task)
      relinking(store, 'tasks', task, () => {
        task.attachable_id = winnerId
      })
  }
  changed(store.tasks)
  const key = NOTE_LINKS.find((links) => links.type === type)?.key
  for (const noteId of [...(store.notesOf[type].get(loserId) ?? [])]) {
    const note = store.protocols.rows.get(noteId)
    if (note && key)
      relinking(store, 'protocols', note, () => {
        note[key] = replaced(note[key], loserId, winnerId)
      })
  }
  changed(store.protocols)
}

/** Deals or projects that refer to a loser, changed to refer to the winner instead. */
function moveWork(
  store: Store,
  collection: 'deals' | 'projects',
  ids: Set<number> | undefined,
  change: (row: WorkRow) => void,
): void {
  for (const id of [...(ids ?? [])]) {
    const row = store[collection].rows.get(id)
    if (row) relinking(store, collection, row, () => change(row))
  }
  changed(store[collection])
}

/** A person's positions after it gains a loser's: one primary position at most. */
function gainPositions(winner: PersonRow, gained: PersonRow['positions']): void {
  const own = winner.positions ?? []
  const hasPrimary = own.some((position) => position.primary_function)
  winner.positions = [
    ...own,
    ...(gained ?? []).map((position) => ({
      ...position,
      primary_function: hasPrimary ? false : position.primary_function,
    })),
  ]
}

/**
 * Merges the loser into the winner in the store, as described at the head of this file, and removes
 * it at `now`. The winner's own fields and `updated_at` are the caller's to change.
 */
export function mergeInto(
  store: Store,
  collection: Mergeable,
  winner: Stamped,
  loserId: number,
  now: number,
) {
  const winnerId = winner.id
  if (collection === 'people') {
    const loser = store.people.rows.get(loserId)
    if (!loser) return
    moveAttached(store, 'Person', loserId, winnerId)
    const person = (row: WorkRow) => {
      row.person_ids = replaced(row.person_ids ?? [], loserId, winnerId)
    }
    moveWork(store, 'deals', store.dealsOfPerson.get(loserId), person)
    moveWork(store, 'projects', store.projectsOfPerson.get(loserId), person)
    const gained = loser.positions ?? []
    unlinkReferences(store, 'people', loser)
    loser.positions = []
    relinking(store, 'people', winner, () => gainPositions(winner as PersonRow, gained))
    moveDetailItems(loser, winner as PersonRow)
    remove(store.people, loserId, now)
    return
  }
  if (!store.companies.rows.has(loserId)) return
  moveAttached(store, 'Company', loserId, winnerId)
  const name = (winner as Stamped & { name?: string }).name ?? null
  for (const personId of [...(store.staff.get(loserId) ?? [])]) {
    const person = store.people.rows.get(personId)
    if (!person) continue
    relinking(store, 'people', person, () => {
      for (const position of person.positions ?? []) {
        if (position.company_id !== loserId) continue
        position.company_id = winnerId
        position.company_name = name
      }
    })
  }
  changed(store.people)
  const company = (row: WorkRow) => {
    row.company_id = winnerId
  }
  moveWork(store, 'deals', store.dealsOfCompany.get(loserId), company)
  moveWork(store, 'projects', store.projectsOfCompany.get(loserId), company)
  remove(store.companies, loserId, now)
}
