// Generated CRM records: companies first (people hold positions there), then people, deals,
// projects and tasks. Rows are built as single literals with every field: spreading into them
// costs memory per row, and a benchmark holds 200,000 people.
import { formatDate } from './clock.ts'
import * as names from './names.ts'
import { linkReferences } from './relations.ts'
import type { AddrRow, CompanyRow, DealRow, DetailRow, PersonRow, ProjectRow, TagRow } from './rows.ts'
import { ascii, DAY, type Generation } from './seeding.ts'
import { insert } from './store.ts'
import { BADGES } from './tasks.ts'
import { DEAL_STATES, decimalString, PROJECT_STATES, VALUE_TYPES } from './work.ts'

export function seedCrm({ store, ids, random, options, time, count }: Generation): void {
  const users = [...store.users.rows.keys()]
  const someUser = () => (random.chance(0.8) ? random.pick(users) : null)
  const within = (row: { created_at: number; updated_at: number }) =>
    random.int(row.created_at, row.updated_at)
  const tags = (row: { created_at: number; updated_at: number }, chance: number): TagRow[] | undefined => {
    if (!random.chance(chance)) return undefined
    const picked = new Set(
      [random.pick(names.TAG_NAMES), random.pick(names.TAG_NAMES)].slice(0, random.int(1, 2)),
    )
    return [...picked].map((name) => {
      const at = within(row)
      return { id: ids.next('tag'), name, api_input: random.chance(0.3), created_at: at, updated_at: at }
    })
  }
  const addr = (row: { created_at: number; updated_at: number }, atype: string): AddrRow => {
    const place = random.pick(names.CITIES)
    const at = within(row)
    return {
      id: ids.next('addr'),
      atype,
      primary: random.chance(0.5) ? true : null,
      street: random.chance(0.1) ? '' : `${random.pick(names.STREETS)} ${random.int(1, 120)}`,
      zip: place.zip,
      city: place.city,
      state_code: place.state,
      country_code: 'DE',
      country_name: 'Deutschland',
      created_at: at,
      updated_at: at,
    }
  }
  const detail = (row: PersonRow | CompanyRow, kind: DetailRow['kind'], atype: string, name: string) => {
    const details = row.details ?? []
    const at = within(row)
    details.push({
      id: ids.next('detail'),
      kind,
      atype,
      name,
      primary: !details.some((d) => d.kind === kind),
      api_input: false,
      created_at: at,
      updated_at: at,
    })
    row.details = details
  }
  const phone = () => `0${random.int(30, 991)} ${random.int(100_000, 9_999_999)}`

  const companyIds: number[] = [...store.companies.rows.keys()]
  for (let i = 0; i < count('companies'); i++) {
    const word = random.pick(names.COMPANY_WORDS)
    const imported = random.chance(0.3)
    const created_at = time.created()
    const row: CompanyRow = {
      id: ids.next('company'),
      name: `${word} ${random.pick(names.BRANCHES)} ${random.pick(names.COMPANY_SUFFIXES)}`,
      background: random.chance(0.2) ? 'Kontakt über die Messe.' : null,
      user_id: someUser(),
      created_by_user_id: random.pick(users),
      updated_by_user_id: random.pick(users),
      is_own: store.companies.rows.size === 0,
      demo: random.chance(0.02),
      import_log_id: imported ? 3000 + random.int(0, 40) : null,
      created_at,
      updated_at: time.updated(created_at),
    }
    row.tags = tags(row, 0.4)
    if (random.chance(0.8)) row.addrs = [addr(row, 'work_hq')]
    if (random.chance(0.7)) detail(row, 'tels', 'office_hq', phone())
    if (random.chance(0.6)) detail(row, 'emails', 'office', `info@${ascii(word.toLowerCase())}.example`)
    if (random.chance(0.5))
      detail(row, 'homepages', 'work', `https://www.${ascii(word.toLowerCase())}.example`)
    insert(store.companies, row)
    companyIds.push(row.id)
  }

  const personIds: number[] = [...store.people.rows.keys()]
  for (let i = 0; i < count('people'); i++) {
    const female = random.chance(0.5)
    const first = random.pick(female ? names.FEMALE_FIRST_NAMES : names.MALE_FIRST_NAMES)
    const last = random.pick(names.LAST_NAMES)
    // Current responses give a string, older ones an integer.
    const gender = random.chance(0.15)
      ? female
        ? 2
        : 1
      : `${female ? 'female' : 'male'}_${random.pick(['user', 'auto'])}`
    const created_at = time.created()
    const row: PersonRow = {
      id: ids.next('person'),
      user_id: someUser(),
      country_code: random.chance(0.8) ? 'de' : null,
      salutation: female ? 'Frau' : 'Herr',
      title: random.chance(0.1) ? random.pick(names.TITLES) : null,
      gender,
      first_name: first,
      name: last,
      background: random.chance(0.2) ? 'Kennengelernt auf der Messe.' : null,
      created_by_user_id: random.pick(users),
      updated_by_user_id: random.pick(users),
      created_at,
      updated_at: time.updated(created_at),
    }
    row.tags = tags(row, 0.6)
    if (random.chance(0.6)) row.addrs = [addr(row, random.pick(['work', 'private', 'work_hq']))]
    if (random.chance(0.7))
      detail(row, 'emails', 'office', `${ascii(first)}.${ascii(last)}@example.de`.toLowerCase())
    if (random.chance(0.5)) detail(row, 'tels', random.pick(['office', 'mobile']), phone())
    if (companyIds.length && random.chance(0.4)) {
      const company_id = random.pick(companyIds)
      const at = within(row)
      row.positions = [
        {
          id: ids.next('position'),
          company_id,
          company_name: store.companies.rows.get(company_id)?.name ?? null,
          name: random.pick(names.POSITIONS),
          department: null,
          primary_function: true,
          former: false,
          created_at: at,
          updated_at: at,
        },
      ]
    }
    insert(store.people, row)
    linkReferences(store, 'people', row)
    personIds.push(row.id)
  }

  const targetDate = () => formatDate(options.now + random.int(-365, 365) * DAY, options.offsetMinutes)
  const customers = () => {
    const picked = personIds.length
      ? Array.from({ length: random.int(0, 3) }, () => random.pick(personIds))
      : []
    return picked.length ? [...new Set(picked)] : undefined
  }
  const someCompany = () => (companyIds.length && random.chance(0.8) ? random.pick(companyIds) : null)
  for (let i = 0; i < count('deals'); i++) {
    const company_id = someCompany()
    const company = company_id ? store.companies.rows.get(company_id) : undefined
    const state = random.pick(DEAL_STATES)
    const valueType = random.chance(0.7) ? 'Total' : random.pick(VALUE_TYPES)
    const created_at = time.created()
    const updated_at = time.updated(created_at)
    const row: DealRow = {
      id: ids.next('deal'),
      user_id: someUser(),
      company_id,
      name: `${random.pick(names.DEAL_WORDS)} ${company?.name.split(' ')[0] ?? random.pick(names.LAST_NAMES)}`,
      description: random.chance(0.3) ? 'Details im Angebot.' : null,
      value: decimalString(random.chance(0.2) ? random.int(100, 99_999) / 10 : random.int(1, 5000) * 10),
      value_type: valueType,
      value_count: decimalString(valueType === 'Total' ? 1 : random.int(1, 24)),
      currency: 'EUR',
      target_date: targetDate(),
      finished_at: state === 'won' || state === 'lost' ? updated_at : null,
      current_state: state,
      created_by_user_id: random.pick(users),
      updated_by_user_id: random.pick(users),
      person_ids: customers(),
      tags: undefined,
      created_at,
      updated_at,
    }
    row.tags = tags(row, 0.3)
    insert(store.deals, row)
    linkReferences(store, 'deals', row)
  }
  for (let i = 0; i < count('projects'); i++) {
    const state = random.pick(PROJECT_STATES)
    const created_at = time.created()
    const updated_at = time.updated(created_at)
    const row: ProjectRow = {
      id: ids.next('project'),
      user_id: someUser(),
      company_id: someCompany(),
      name: `${random.pick(names.DEAL_WORDS)} ${random.pick(names.COMPANY_WORDS)}`,
      description: random.chance(0.3) ? 'Details im Projektplan.' : null,
      target_date: targetDate(),
      finished_at: state === 'closed' ? updated_at : null,
      current_state: state,
      created_by_user_id: random.pick(users),
      updated_by_user_id: random.pick(users),
      person_ids: customers(),
      tags: undefined,
      created_at,
      updated_at,
    }
    row.tags = tags(row, 0.3)
    insert(store.projects, row)
    linkReferences(store, 'projects', row)
  }

  const attachables = [
    ['Person', [...store.people.rows.keys()]],
    ['Company', [...store.companies.rows.keys()]],
    ['Deal', [...store.deals.rows.keys()]],
    ['Project', [...store.projects.rows.keys()]],
  ] as const
  for (let i = 0; i < count('tasks'); i++) {
    const [type, candidates] = random.pick(attachables)
    const created_at = time.created()
    const due = created_at + random.int(0, 30) * DAY
    const task = insert(store.tasks, {
      id: ids.next('task'),
      attachable_id: candidates.length ? random.pick(candidates) : null,
      attachable_type: candidates.length ? type : null,
      badge: random.pick(BADGES),
      finished: random.chance(0.4),
      name: random.pick(names.TASK_NAMES),
      precise_time: due,
      user_id: random.pick(users),
      created_by_user_id: random.pick(users),
      updated_by_user_id: random.pick(users),
      comments_count: random.int(0, 3),
      end_time: random.chance(0.3) ? due + 3600 : null,
      fuzzy: random.chance(0.2),
      entire_day: random.chance(0.1),
      created_at,
      updated_at: time.updated(created_at),
    })
    linkReferences(store, 'tasks', task)
  }
}
