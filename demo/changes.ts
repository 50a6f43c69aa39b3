// The demo's stream of changes: what users of the CRM and of the reservation service do in a busy
// minute (edits, tags, new records, deletions), made through the sandbox's control API, which fires
// the CRM's webhooks as the real UI would. Deterministic for a given seed number.
//
// Left out on purpose: deleting a task, or a record that has tasks (the tasks vanish with it), and
// deleting reservation records. No webhook and no count reveals those; only the nightly full
// reconciliation does, and the demo ends long before one.
import type { Sandbox } from '../sandbox/index.ts'

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

export interface ChangeStream {
  /** Makes one change; returns what it did, e.g. `person.update`. */
  next(): string
}

export function changeStream(sandbox: Sandbox, seed: number): ChangeStream {
  const random = randomSource(seed)
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)]
  const { crm, reservation } = sandbox.control
  let made = 0

  /** Records that have tasks: deleting one would delete its tasks without a trace. */
  const withTasks = () => {
    const taken = new Set<string>()
    for (const id of crm.liveIds('tasks')) {
      const task = crm.get('tasks', id)
      const collection = ATTACHABLE[String(task?.attachable_type)]
      if (collection) taken.add(`${collection}:${task?.attachable_id}`)
    }
    return taken
  }

  const crmChange = (): string => {
    const collection = pick(['people', 'people', 'companies', 'deals', 'projects'] as const) ?? 'people'
    const id = pick(crm.liveIds(collection))
    const roll = random()
    if (id === undefined || roll < 0.1) {
      crm.create(collection, newRecord(collection, made))
      return `${collection}.create`
    }
    if (roll < 0.55) {
      const fields =
        collection === 'deals'
          ? { current_state: pick(DEAL_STATES), value: Math.round(random() * 50_000) }
          : { name: `Renamed ${made}` }
      crm.update(collection, id, fields)
      return `${collection}.update`
    }
    if (roll < 0.75) {
      crm.addTag(collection, id, pick(TAGS) ?? 'VIP')
      return `${collection}.tag`
    }
    if (roll < 0.85) {
      const tag = (crm.get(collection, id)?.tags as { id: number }[] | undefined)?.[0]
      if (tag) crm.removeTag(collection, id, tag.id)
      return `${collection}.untag`
    }
    if (withTasks().has(`${collection}:${id}`)) {
      crm.update(collection, id, { background: `Note ${made}` })
      return `${collection}.update`
    }
    crm.destroy(collection, id)
    return `${collection}.destroy`
  }

  const taskChange = (): string => {
    const id = pick(crm.liveIds('tasks'))
    if (id !== undefined) crm.update('tasks', id, { name: `Call back ${made}` })
    return 'tasks.update'
  }

  const reservationChange = (): string => {
    if (random() < 0.3) {
      reservation.create('contacts', { first: 'Demo', last: `Guest ${made}` })
      return 'contacts.create'
    }
    const id = pick(reservation.liveIds('bookings'))
    if (id !== undefined) reservation.update('bookings', id, { number_guests: 1 + Math.floor(random() * 12) })
    return 'bookings.update'
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
