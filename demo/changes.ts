// The demo's stream of changes: what users of the CRM and of the reservation service do in a busy
// minute (edits, tags, new records, deletions, merges of duplicates), made through the sandbox's
// control API, which fires
// the CRM's webhooks as the real UI would. Deterministic for a given seed number.
//
// Valid by construction: each change is chosen from the sandbox's state at that moment. It acts on
// live records only, adds a tag only when the record has no tag of that name (the CRM compares names
// case-insensitively and answers 422 "has already been taken"), removes a tag only when there is
// one, creates people only while the account has room for them, and gives new records every field
// the CRM requires. When a kind of change does not apply to the record picked, the record is edited
// instead. test/demo/changes.test.ts runs the stream over many seeds; a change the sandbox refuses
// all the same ends in a RefusedChange, which the demo logs before it goes on.
//
// Left out on purpose: deleting a task, or a record that has tasks (the tasks vanish with it),
// deleting reservation records, and status changes of deals and projects (`change_status` bumps no
// `updated_at`). No webhook and no count reveals those; only the nightly full reconciliation does,
// and the demo ends long before one. A merge is in: its losers vanish silently too, but the count of
// people or companies drops, and what was theirs (tasks, notes, memberships) is checked at once.
import { type Sandbox, SandboxError } from '../sandbox/index.ts'

type CrmCollection = 'people' | 'companies' | 'deals' | 'projects'
const ATTACHABLE: Record<string, CrmCollection> = {
  Person: 'people',
  Company: 'companies',
  Deal: 'deals',
  Project: 'projects',
}
const TAGS = ['VIP', 'Lead', 'Presse', 'Newsletter', 'Messe 2025']

const DEAL_STATES = ['open_25', 'open_50', 'won', 'lost']

/** The fields the CRM requires of a new record. */
function newRecord(collection: CrmCollection, made: number): Record<string, unknown> {
  const name = `Demo ${collection} ${made}`
  const targetDate = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10)
  if (collection === 'deals') {
    return {
      name,
      value: 5000,
      value_type: 'Total',
      value_count: 1,
      target_date: targetDate,
      currency: 'EUR',
    }
  }
  if (collection === 'projects') return { name, target_date: targetDate }
  return { name }
}

/** A small deterministic random source (a linear congruential generator). */
export function randomSource(seed: number): () => number {
  let state = seed >>> 0 || 1
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

/** A change the sandbox refused all the same, e.g. after something outside the stream changed it. */
export class RefusedChange extends Error {
  /** What was tried, e.g. `people.tag`. */
  readonly change: string
  constructor(change: string, target: string, cause: SandboxError) {
    super(`${change} (${target}) refused: ${cause.message}`, { cause })
    this.change = change
  }
}

export interface ChangeStream {
  /** Makes one change; returns what it did, e.g. `people.update`. Throws RefusedChange if refused. */
  next(): string
}

export function changeStream(sandbox: Sandbox, seed: number): ChangeStream {
  const random = randomSource(seed)
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)]
  const control = sandbox.control
  const { crm, reservation } = control
  let made = 0

  /** Makes the change through the control API; a refusal becomes a RefusedChange. */
  const act = (change: string, target: string, call: () => unknown): string => {
    try {
      call()
    } catch (error) {
      if (error instanceof SandboxError) throw new RefusedChange(change, target, error)
      throw error
    }
    return change
  }

  /** Records that have tasks: deleting one would delete its tasks without a trace. */
  const hasTasks = (collection: CrmCollection, id: number) => {
    for (const taskId of crm.liveIds('tasks')) {
      const task = crm.get('tasks', taskId)
      if (ATTACHABLE[String(task?.attachable_type)] === collection && task?.attachable_id === id) return true
    }
    return false
  }
  const tagsOf = (collection: CrmCollection, id: number) =>
    (crm.get(collection, id)?.tags as { id: number; name: string }[] | undefined) ?? []
  /** The sandbox refuses new people once the account's contact storage is full. */
  const roomFor = (collection: CrmCollection) => {
    const limit = control.behaviour().maxPeople
    return collection !== 'people' || limit === null || crm.liveIds('people').length < limit
  }

  const create = (collection: CrmCollection) =>
    act(`${collection}.create`, `new ${collection}`, () =>
      crm.create(collection, newRecord(collection, made)),
    )

  const update = (collection: CrmCollection, id: number) => {
    const fields =
      collection === 'deals'
        ? { current_state: pick(DEAL_STATES), value: Math.round(random() * 50_000) }
        : { name: `Renamed ${made}` }
    return act(`${collection}.update`, `${collection} ${id}`, () => crm.update(collection, id, fields))
  }

  /** A tag the record does not have yet; an edit when it has them all. */
  const tag = (collection: CrmCollection, id: number) => {
    const taken = new Set(tagsOf(collection, id).map((tag) => tag.name.toLowerCase()))
    const name = pick(TAGS.filter((candidate) => !taken.has(candidate.toLowerCase())))
    if (name === undefined) return update(collection, id)
    return act(`${collection}.tag`, `${collection} ${id}, tag ${name}`, () =>
      crm.addTag(collection, id, name),
    )
  }

  /** One of the record's tags removed; an edit when it has none. */
  const untag = (collection: CrmCollection, id: number) => {
    const tag = pick(tagsOf(collection, id))
    if (tag === undefined) return update(collection, id)
    return act(`${collection}.untag`, `${collection} ${id}, tag ${tag.id}`, () =>
      crm.removeTag(collection, id, tag.id),
    )
  }

  /** The record deleted; a note on it instead when it has tasks. */
  const destroy = (collection: CrmCollection, id: number) => {
    if (hasTasks(collection, id)) {
      const fields =
        collection === 'people' || collection === 'companies'
          ? { background: `Note ${made}` }
          : { description: `Note ${made}` }
      return act(`${collection}.update`, `${collection} ${id}`, () => crm.update(collection, id, fields))
    }
    return act(`${collection}.destroy`, `${collection} ${id}`, () => crm.destroy(collection, id))
  }

  /** Another person or company merged into this one (a duplicate cleaned up); an edit when alone. */
  const merge = (collection: 'people' | 'companies', id: number) => {
    const loser = pick(crm.liveIds(collection).filter((other) => other !== id))
    if (loser === undefined) return update(collection, id)
    return act(`${collection}.merge`, `${collection} ${loser} into ${id}`, () =>
      crm.merge(collection, id, [loser]),
    )
  }

  const crmChange = (): string => {
    const collection = pick(['people', 'people', 'companies', 'deals', 'projects'] as const) ?? 'people'
    const id = pick(crm.liveIds(collection))
    const roll = random()
    if ((id === undefined || roll < 0.1) && roomFor(collection)) return create(collection)
    if (id === undefined) return taskChange()
    if (roll < 0.55) return update(collection, id)
    if (roll < 0.75) return tag(collection, id)
    if (roll < 0.85) return untag(collection, id)
    if (roll < 0.88 && (collection === 'people' || collection === 'companies')) return merge(collection, id)
    return destroy(collection, id)
  }

  const taskChange = (): string => {
    const id = pick(crm.liveIds('tasks'))
    if (id === undefined) return reservationChange()
    return act('tasks.update', `tasks ${id}`, () => crm.update('tasks', id, { name: `Call back ${made}` }))
  }

  const reservationChange = (): string => {
    const id = random() < 0.3 ? undefined : pick(reservation.liveIds('bookings'))
    if (id === undefined) {
      return act('contacts.create', 'new contact', () =>
        reservation.create('contacts', { first: 'Demo', last: `Guest ${made}` }),
      )
    }
    const guests = 1 + Math.floor(random() * 12)
    return act('bookings.update', `bookings ${id}`, () =>
      reservation.update('bookings', id, { number_guests: guests }),
    )
  }

  return {
    next() {
      made++
      const roll = random()
      if (roll < 0.75) return crmChange()
      if (roll < 0.85) return taskChange()
      return reservationChange()
    },
  }
}
