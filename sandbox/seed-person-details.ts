// Generated historic events and assistants of the people of one seeding (person-details.ts): about
// 60% have a birthday, 10% a second event of another kind, 10% one or two assistants, and one in 200
// a dozen or more of one or the other, so that their routes need a second page. Drawn last, from a
// random stream of their own, so that they shift neither the records nor the ids seeded before them.
// The same values serve the random changes of the control API (person-detail-changes.ts).
import * as names from './names.ts'
import { createRandom, type Random } from './random.ts'
import type { AssiRow, HistoricEventRow, PersonRow } from './rows.ts'
import { ascii, type Generation } from './seeding.ts'

type EventFields = Pick<HistoricEventRow, 'unparsed_date' | 'atype' | 'desc'>
type AssiFields = Pick<AssiRow, 'name' | 'tel' | 'email'>

const OTHER_EVENTS = [
  ['anniversary', 'Hochzeitstag'],
  ['anniversary', 'Firmenjubiläum'],
  ['name_day', 'Namenstag'],
  ['other', null],
] as const

const pad = (n: number) => String(n).padStart(2, '0')

/** A date as people type it: `1984-03-12`, `12.03.1984`, or without the year, `12.03.`. */
export function unparsedDate(random: Random): string {
  const day = pad(random.int(1, 28))
  const month = pad(random.int(1, 12))
  const year = random.int(1940, 2005)
  const form = random.int(0, 2)
  if (form === 0) return `${year}-${month}-${day}`
  return form === 1 ? `${day}.${month}.${year}` : `${day}.${month}.`
}

/** A birthday, or an event of another kind. */
export function eventFields(random: Random, birthday: boolean): EventFields {
  if (birthday) return { unparsed_date: unparsedDate(random), atype: 'birthday', desc: null }
  const [atype, desc] = random.pick(OTHER_EVENTS)
  return { unparsed_date: unparsedDate(random), atype, desc }
}

/** An assistant; some without a phone number or an e-mail address. */
export function assiFields(random: Random): AssiFields {
  const first = random.pick(random.chance(0.7) ? names.FEMALE_FIRST_NAMES : names.MALE_FIRST_NAMES)
  const last = random.pick(names.LAST_NAMES)
  const tel = `0${random.int(30, 991)} ${random.int(100_000, 9_999_999)}`
  return {
    name: `${first} ${last}`,
    tel: random.chance(0.8) ? tel : null,
    email: random.chance(0.7) ? `${ascii(first)}.${ascii(last)}@assistenz.example`.toLowerCase() : null,
  }
}

/** Literals with every field, as seed-crm.ts builds its rows: a benchmark seeds 200,000 people. */
export function seedPersonDetails({ ids, options }: Generation, people: readonly PersonRow[]): void {
  const random = createRandom(options.seed ^ 0x0b1a7d5)
  for (const row of people) {
    const at = () => random.int(row.created_at, row.updated_at)
    const event = (birthday: boolean): HistoricEventRow => {
      const stamp = at()
      const { unparsed_date, atype, desc } = eventFields(random, birthday)
      const id = ids.next('historic_event')
      return { id, unparsed_date, atype, desc, created_at: stamp, updated_at: stamp }
    }
    const assi = (): AssiRow => {
      const stamp = at()
      const { name, tel, email } = assiFields(random)
      return { id: ids.next('assi'), name, tel, email, created_at: stamp, updated_at: stamp }
    }
    const events: HistoricEventRow[] = []
    const assis: AssiRow[] = []
    if (random.chance(0.6)) events.push(event(true))
    if (random.chance(0.1)) events.push(event(false))
    if (random.chance(0.1)) for (let n = random.int(1, 2); n > 0; n--) assis.push(assi())
    if (random.chance(0.005)) {
      const many = random.int(12, 24)
      if (random.chance(0.5)) while (events.length < many) events.push(event(false))
      else while (assis.length < many) assis.push(assi())
    }
    if (events.length) row.historic_events = events
    if (assis.length) row.assis = assis
  }
}
