// Deterministic test data: the same seed number and count give the same records with the same ids.
// Written straight into the store (no webhooks, no validation) so 200,000 people take seconds.
import type { Ids } from './ids.ts'
import { crmKinds } from './kinds.ts'
import { createRandom } from './random.ts'
import { reservationKinds } from './reservation-kinds.ts'
import { seedCrm } from './seed-crm.ts'
import { seedReservations } from './seed-reservations.ts'
import { moments, type SeededResource, type SeedOptions } from './seeding.ts'
import { insert, type Store } from './store.ts'

export { SEEDED_RESOURCES, type SeedCount, type SeededResource, type SeedOptions } from './seeding.ts'

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
  seedCrm(generation)
  seedReservations(generation)
  for (const kind of Object.values(crmKinds)) kind.seed?.(generation)
  for (const kind of Object.values(reservationKinds)) kind.seed?.(generation)
}
