// Deterministic test data: the same seed number and count give the same records with the same ids.
// Written straight into the store (no webhooks, no validation) so 200,000 people take seconds.
import type { Ids } from './ids.ts'
import { crmKinds, PLURALS } from './kinds.ts'
import { createRandom } from './random.ts'
import { RESERVATION_COLLECTIONS, reservationKinds } from './reservation-kinds.ts'
import type { Stamped } from './rows.ts'
import { seedAvatarsAndConnections } from './seed-avatars-connections.ts'
import { seedCrm } from './seed-crm.ts'
import { seedPersonDetails } from './seed-person-details.ts'
import { seedReservations } from './seed-reservations.ts'
import { DAY, type Generation, moments, type SeededResource, type SeedOptions } from './seeding.ts'
import { type Collection, changed, insert, type Store } from './store.ts'

export type { SeedCount, SeedOptions } from './seeding.ts'

/** Every kind of both services, by its collection name, in the order of the tables of kinds. */
export const SEEDED_RESOURCES = [...PLURALS, ...RESERVATION_COLLECTIONS] as [
  SeededResource,
  ...SeededResource[],
]

/** Users exist in every account; the first owns the API key. */
export function seedUsers(store: Store, ids: Ids): number[] {
  const people = [
    ['Erika', 'Musterfrau'],
    ['Hans', 'Beispiel'],
    ['Petra', 'Vertrieb'],
    ['Ole', 'Kundenservice'],
    ['Ines', 'Buchhaltung'],
  ] as const
  return people.map(([first, name], index) => {
    const id = ids.next('user')
    const login = `${first}.${name}@sandbox.example`.toLowerCase()
    insert(store.users, { id, first, name, login, active: index < 4 })
    return id
  })
}

export function seedRecords(store: Store, ids: Ids, options: SeedOptions): void {
  const random = createRandom(options.seed)
  const { count } = options
  const generation = {
    store,
    ids,
    random,
    options,
    time: moments(random, options.now),
    count: (resource: SeededResource) => (typeof count === 'number' ? count : (count[resource] ?? 0)),
  }
  const before = { people: store.people.rows.size, companies: store.companies.rows.size }
  seedCrm(generation)
  seedReservations(generation)
  for (const kind of Object.values(crmKinds)) kind.seed?.(generation)
  for (const kind of Object.values(reservationKinds)) kind.seed?.(generation)
  if (options.ties) seedTieGroups(generation, options.ties)
  // The people and companies of this seeding: a map lists them last.
  const people = [...store.people.rows.values()].slice(before.people)
  seedAvatarsAndConnections(generation, people, [...store.companies.rows.values()].slice(before.companies))
  seedPersonDetails(generation, people)
}

/** The resources the engine walks by `updated_at`; the activity log keeps its own times. */
const TIED: readonly SeededResource[] = [
  'people',
  'companies',
  'deals',
  'projects',
  'tasks',
  'protocols',
  'contacts',
  'bookings',
]

/** Bulk edits: groups of `size` records of each resource given one `updated_at` (see SeedOptions). */
function seedTieGroups(generation: Generation, size: number): void {
  const { store, random, options } = generation
  for (const resource of TIED) {
    const rows = [...(store[resource] as Collection<Stamped>).rows.values()]
    if (rows.length < 2 * size) continue
    for (let group = 0; group < Math.max(1, Math.floor(rows.length / (4 * size))); group++) {
      const at = options.now - random.int(120, 30 * DAY)
      const eligible = rows.filter((row) => row.created_at <= at)
      for (let i = 0; i < size && eligible.length > 0; i++) {
        const [row] = eligible.splice(random.int(0, eligible.length - 1), 1)
        if (row) row.updated_at = at
      }
    }
    changed(store[resource] as Collection<Stamped>)
  }
}
