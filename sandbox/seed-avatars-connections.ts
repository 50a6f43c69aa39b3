// Generated avatars and connections of the people and companies of one seeding: some have a picture,
// some are connected to other people and companies, a few to a profile on a network (an item of another
// shape, without an id). Drawn last, from a random stream of their own, so that they shift neither the
// records nor the ids seeded before them.
import * as names from './names.ts'
import { createRandom } from './random.ts'
import type { AvatarRow, CompanyRow, ConnectionRow, PersonRow, Stamped } from './rows.ts'
import { ascii, type Generation } from './seeding.ts'

type Contact = { type: 'Person'; row: PersonRow } | { type: 'Company'; row: CompanyRow }

export function seedAvatarsAndConnections(
  { store, ids, options }: Generation,
  people: readonly PersonRow[],
  companies: readonly CompanyRow[],
): void {
  const random = createRandom(options.seed ^ 0x0a7a7a5)
  const within = (row: Stamped) => random.int(row.created_at, row.updated_at)
  const targets = [
    ...[...store.people.rows.keys()].map((id) => ({ type: 'Person' as const, id })),
    ...[...store.companies.rows.keys()].map((id) => ({ type: 'Company' as const, id })),
  ]
  const contacts: Contact[] = [
    ...people.map((row) => ({ type: 'Person' as const, row })),
    ...companies.map((row) => ({ type: 'Company' as const, row })),
  ]
  for (const contact of contacts) {
    const { row } = contact
    const name = contact.type === 'Person' ? `${contact.row.first_name ?? ''} ${row.name}` : row.name
    const slug = ascii(name.toLowerCase()).replace(/[^a-z0-9]+/g, '-')
    if (random.chance(contact.type === 'Person' ? 0.3 : 0.5)) {
      const at = within(row)
      const avatar: AvatarRow = {
        id: ids.next('avatar'),
        filename: contact.type === 'Person' ? `${slug}.jpg` : `logo-${slug}.png`,
        content_type: contact.type === 'Person' ? 'image/jpeg' : 'image/png',
        size: random.int(8_000, 250_000),
        created_at: at,
        updated_at: at,
      }
      row.avatar = avatar
    }
    if (targets.length < 2 || !random.chance(0.25)) continue
    const connections: ConnectionRow[] = []
    for (let i = random.int(1, 3); i > 0; i--) {
      const at = within(row)
      const target = random.pick(targets)
      if (random.chance(0.2) || target.id === row.id) {
        const network = random.pick(names.NETWORKS)
        const url = `https://www.${network}.example/profile/${slug}`
        connections.push({
          id: ids.next('connection'),
          kind: 'network',
          network,
          url,
          created_at: at,
          updated_at: at,
        })
        continue
      }
      connections.push({
        id: ids.next('connection'),
        kind: 'record',
        connectable_type: target.type,
        connectable_id: target.id,
        name: random.pick(target.type === 'Person' ? names.PERSON_CONNECTIONS : names.COMPANY_CONNECTIONS),
        created_at: at,
        updated_at: at,
      })
    }
    row.connections = connections
  }
}
