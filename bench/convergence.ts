// 8. Convergence at scale (opt-in: `--only convergence`): for each HOOK_OBJECT_TYPE, with and without
// hostile faults, the engine as `crm-sync start` runs it (its own process, INCREMENTAL_SYNC_INTERVAL 10,
// the default nightly FULL_SYNC_CRON, the engine's default budgets, mirrored by the sandbox) mirrors a
// seeded account 10x the demo's size, then a stream of changes of every kind (deletions the upstream
// makes silently included: a parent's tasks, a contact's bookings; avatars, connections and status
// changes, silent too; merges of people and companies, whose losers vanish silently and whose tasks and
// memberships move to the winner) runs for a minute. At the last
// change a full resync is asked for (DESIGN.md's "in sync" allows one full reconciliation for changes
// that leave updated_at alone, such as tags, which the sandbox announces nowhere), and the mirror is
// compared with the sandbox's truth every second until it matches (and no delivery is left on its way
// or in the inbox) and then the tests' full comparison (sandbox/mirror-truth.ts) agrees, or a deadline
// passes; what still differs is counted per table and kind. Requests are counted by the sandbox.
//
// Options (`--option convergence.<name>=<value>`): see OPTIONS below. `--quick`: 1x sizes, 300 changes
// in 15 s, lean only, 60 s deadline. `scale=100`: 100x sizes, lean without faults unless told otherwise.
import { sql } from 'kysely'
import {
  type Counters,
  type FaultsPatch,
  type Sandbox,
  SandboxError,
  type SeedCount,
  startSandbox,
} from '../sandbox/index.ts'
import { compareMirror, converged, describe as describeTruth } from '../sandbox/mirror-truth.ts'
import { HOOK_OBJECT_TYPES, parseConfig } from '../src/config/index.ts'
import type { Db } from '../src/store/database.ts'
import { readInboxBacklog } from '../src/store/status-queries.ts'
import { JOB_SCHEMA, QUEUES } from '../src/sync/job-queue.ts'
import { createBenchDatabase } from './support/database.ts'
import { spawnEngine } from './support/engines.ts'
import { atMost, type Context, type Figure, type Scenario, type Target } from './support/scenario.ts'
import { round, sleep, waitFor } from './support/stats.ts'

type ObjectType = (typeof HOOK_OBJECT_TYPES)[number]
type Resource = 'people' | 'companies' | 'deals' | 'projects' | 'tasks' | 'contacts' | 'bookings'

/** The sizes at scale 1; the scenario runs at 10x (3,000 people, ...) unless told otherwise. */
const UNIT: Record<Resource, number> = {
  people: 300,
  companies: 100,
  deals: 150,
  projects: 60,
  tasks: 200,
  contacts: 200,
  bookings: 400,
}
/** Users are not seeded by size: every sandbox account has 5 (one page). */
const USER_PAGES = 1

/** The CRM's budget, as the upstream enforces it; the engine's default is the same. */
const CRM_BUDGET = { requests: 50, windowSeconds: 10 }
/** The page size to plan for (the public API's maximum); the sandbox serves no more. */
const PAGE_SIZE = 250
const INTERVAL_SECONDS = 10
const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789'

const HOSTILE: FaultsPatch = {
  deliveries: { dropRate: 0.15, duplicateRate: 0.05, delayRate: 0.1, delayMs: 3000 },
  crm: { errorRate: 0.02, throttleRate: 0.02 },
  reservation: { errorRate: 0.02, throttleRate: 0.02 },
}

const OPTIONS = {
  hooks: 'HOOK_OBJECT_TYPEs to run, comma-separated (default all four; lean with --quick or scale 100)',
  faults: 'off, on or both (default both; off at scale 100)',
  scale: 'sizes as a multiple of 300 people, 100 companies, ... (default 10; 1 with --quick)',
  changes: 'changes made after the first sync (default 4000; 300 with --quick)',
  seconds: 'seconds over which the changes are spread (default 60; 15 with --quick)',
  deadline: 'seconds to wait for convergence after the last change (default 600; 60 with --quick)',
  'first-deadline': 'seconds to wait for the first sync (default the larger of 300 and 20 x scale)',
  seed: 'seed of the data, the fault decisions and the changes; the same number replays a run (default 1)',
  ties: "bulk edits: groups of this many records per resource sharing one updated_at, a quarter of each (default 0: only the seed's own bursts)",
  'tie-order': 'how the sandbox orders ties: shuffled (anew on every request, its default) or by-id',
  latency: 'milliseconds every upstream call takes, uniform in a range such as 150-600 (default 0: loopback)',
} as const

const FAULT_MODES = new Map([
  ['off', [false]],
  ['on', [true]],
  ['both', [false, true]],
])

interface Settings {
  hooks: ObjectType[]
  faults: boolean[]
  scale: number
  sizes: Record<Resource, number>
  changes: number
  seconds: number
  deadline: number
  firstDeadline: number
  seed: number
  ties: number
  tieOrder: 'shuffled' | 'by-id'
  /** Added to every upstream call, uniform in [min, max] ms. */
  latency: { min: number; max: number }
}

function positive(options: Readonly<Record<string, string>>, name: string, fallback: number): number {
  const given = options[name]
  if (given === undefined) return fallback
  const value = Number(given)
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`convergence.${name}: not a positive number: ${given}`)
  return value
}

function settingsOf(ctx: Context): Settings {
  const { options, quick } = ctx
  const scale = positive(options, 'scale', quick ? 1 : 10)
  const big = scale >= 100
  const hooks = (options.hooks ?? (quick || big ? 'lean' : HOOK_OBJECT_TYPES.join(',')))
    .split(',')
    .map((hook) => hook.trim())
    .filter(Boolean)
  const unknown = hooks.filter((hook) => !(HOOK_OBJECT_TYPES as readonly string[]).includes(hook))
  if (unknown.length || hooks.length === 0)
    throw new Error(
      `convergence.hooks: expected some of ${HOOK_OBJECT_TYPES.join(',')}, got ${options.hooks}`,
    )
  const faults = options.faults ?? (big ? 'off' : 'both')
  const modes = FAULT_MODES.get(faults)
  if (!modes) throw new Error(`convergence.faults: expected off, on or both, got ${faults}`)
  const sizes = Object.fromEntries(
    Object.entries(UNIT).map(([resource, size]) => [resource, Math.max(1, Math.round(size * scale))]),
  ) as Record<Resource, number>
  return {
    hooks: hooks as ObjectType[],
    faults: modes,
    scale,
    sizes,
    changes: Math.round(positive(options, 'changes', quick ? 300 : 4000)),
    seconds: positive(options, 'seconds', quick ? 15 : 60),
    deadline: positive(options, 'deadline', quick ? 60 : 600),
    firstDeadline: positive(options, 'first-deadline', Math.max(300, 20 * scale)),
    seed: Math.round(positive(options, 'seed', 1)),
    ties: options.ties === undefined || options.ties === '0' ? 0 : Math.round(positive(options, 'ties', 0)),
    tieOrder: tieOrderOf(options['tie-order']),
    latency: latencyOf(options.latency),
  }
}

function latencyOf(given: string | undefined): { min: number; max: number } {
  if (given === undefined || given === '0') return { min: 0, max: 0 }
  const match = /^(\d+)(?:-(\d+))?$/.exec(given)
  const [min, max] = [Number(match?.[1]), Number(match?.[2] ?? match?.[1])]
  if (!match || max < min) throw new Error(`convergence.latency: expected <ms> or <min>-<max>, got ${given}`)
  return { min, max }
}

/** The faults of a run with the latency of every upstream call added. */
function withLatency(faults: FaultsPatch, latency: Settings['latency']): FaultsPatch {
  if (latency.max === 0) return faults
  const range = { latencyMs: latency.min, latencyMaxMs: latency.max }
  return {
    ...faults,
    crm: { ...faults.crm, ...range },
    reservation: { ...faults.reservation, ...range },
  }
}

function tieOrderOf(given: string | undefined): 'shuffled' | 'by-id' {
  if (given === undefined || given === 'shuffled' || given === 'by-id') return given ?? 'shuffled'
  throw new Error(`convergence.tie-order: expected shuffled or by-id, got ${given}`)
}

/** The engine's default budget and page sizes (what `crm-sync start` runs with when nothing is set). */
function engineDefaults() {
  const { upstream } = parseConfig({ CRM_BASE_URL: 'http://127.0.0.1', CRM_API_KEY: 'bench-defaults-only' })
  return upstream
}

/**
 * The least time in which a budget of `requests` per window lets `count` requests through, starting
 * fresh: all of a window's at once, so the last one goes at the start of window ceil(count / requests).
 */
function budgetSeconds(count: number, budget: { requests: number; windowSeconds: number }): number {
  return count <= 0 ? 0 : Math.floor((count - 1) / budget.requests) * budget.windowSeconds
}

/**
 * The bound of a first sync that no engine can beat: every page of each service's resources once at the
 * upstream's largest page, each service within its own budget (they run side by side).
 */
function firstSyncBound(
  sizes: Record<Resource, number>,
  reservationBudget: { requests: number; windowSeconds: number },
): { seconds: number; label: string } {
  const pages = (names: Resource[], extra: number) =>
    names.reduce((sum, name) => sum + Math.ceil(sizes[name] / PAGE_SIZE), extra)
  const crm = pages(CRM_RESOURCES, USER_PAGES)
  const reservation = pages(RESERVATION_RESOURCES, 0)
  const seconds = Math.max(budgetSeconds(crm, CRM_BUDGET), budgetSeconds(reservation, reservationBudget))
  return {
    seconds,
    label: `every page once at ${PAGE_SIZE} a page, each service in its own budget: CRM ${crm} pages, reservation ${reservation} (${CRM_BUDGET.requests} a window go at once)`,
  }
}

const CRM_RESOURCES: Resource[] = ['people', 'companies', 'deals', 'projects', 'tasks']
const RESERVATION_RESOURCES: Resource[] = ['contacts', 'bookings']

/**
 * What one read of every page takes at the engine's own page sizes and budgets, per service (the two
 * budgets are separate, so the longer one bounds it): what bounds a first sync.
 */
function engineSweep(sizes: Record<Resource, number>, upstream: ReturnType<typeof engineDefaults>): string {
  const service = (
    names: Resource[],
    asked: number,
    budget: { requests: number; windowSeconds: number },
    extraPages: number,
  ) => {
    const perPage = Math.min(asked, PAGE_SIZE)
    const pages = names.reduce((sum, name) => sum + Math.ceil(sizes[name] / perPage), extraPages)
    const perSecond = budget.requests / budget.windowSeconds
    return `${pages} pages of ${perPage} at ${round(perSecond, 1)}/s (${round(pages / perSecond, 1)} s)`
  }
  return (
    `at the engine's own page sizes and budgets: CRM ${service(CRM_RESOURCES, upstream.crm.pageSize, upstream.crm, USER_PAGES)}, ` +
    `reservation ${service(RESERVATION_RESOURCES, upstream.reservation.pageSize, upstream.reservation, 0)}`
  )
}

// ---- the truth and the mirror -------------------------------------------------------------------

const TABLES = [
  { resource: 'people', table: 'crm.people', service: 'crm', fields: ['name', 'first_name'], tags: true },
  { resource: 'companies', table: 'crm.companies', service: 'crm', fields: ['name'], tags: true },
  {
    resource: 'deals',
    table: 'crm.deals',
    service: 'crm',
    fields: ['name', 'current_state'],
    tags: true,
  },
  {
    resource: 'projects',
    table: 'crm.projects',
    service: 'crm',
    fields: ['name', 'current_state'],
    tags: true,
  },
  { resource: 'tasks', table: 'crm.tasks', service: 'crm', fields: ['name'], tags: false },
  {
    resource: 'contacts',
    table: 'reservations.contacts',
    service: 'reservation',
    fields: ['last', 'first'],
    tags: false,
  },
  {
    resource: 'bookings',
    table: 'reservations.bookings',
    service: 'reservation',
    fields: ['status', 'number_guests'],
    tags: false,
  },
] as const

type Table = (typeof TABLES)[number]

interface TruthRecord {
  updatedAt: number
  fields: string[]
  tags: string
}

interface TruthTable {
  table: Table
  live: Map<number, TruthRecord>
  deleted: Set<number>
}

type Upstream = {
  liveIds(collection: string): number[]
  deletedIds(collection: string): number[]
  get(collection: string, id: number): Record<string, unknown> | undefined
}

const text = (value: unknown) => (value === null || value === undefined ? '' : String(value))
const tagNames = (tags: unknown) =>
  ((tags ?? []) as { name: string }[])
    .map((tag) => tag.name)
    .sort()
    .join(',')

/** What the sandbox holds now. Taken once per phase: the upstream does not change while it is compared. */
function snapshot(sandbox: Sandbox): TruthTable[] {
  return TABLES.map((table) => {
    const upstream = sandbox.control[table.service] as unknown as Upstream
    const live = new Map<number, TruthRecord>()
    for (const id of upstream.liveIds(table.resource)) {
      const record = upstream.get(table.resource, id)
      if (!record) continue
      live.set(id, {
        updatedAt: Date.parse(String(record.updated_at)),
        fields: table.fields.map((field) => text(record[field])),
        tags: table.tags ? tagNames(record.tags) : '',
      })
    }
    return { table, live, deleted: new Set(upstream.deletedIds(table.resource)) }
  })
}

const KINDS = {
  missing: 'live upstream, missing in the mirror',
  tombstoned: 'live upstream, tombstoned in the mirror',
  updatedAt: 'updated_at differs',
  fields: 'fields differ (same updated_at)',
  tags: 'tags differ',
  notDeleted: 'deleted upstream, live in the mirror',
  unknown: 'never upstream, live in the mirror',
} as const
type Kind = keyof typeof KINDS

interface Differences {
  total: number
  /** table → kind → count. */
  counts: Record<string, Partial<Record<Kind, number>>>
  /** table → kind → a few ids. */
  examples: Record<string, Partial<Record<Kind, number[]>>>
}

type MirrorRow = { id: number | string; updated_at: Date | null; _deleted_at: Date | null } & Record<
  string,
  unknown
>

/** DESIGN.md's "in sync", per table: live ids, updated_at, fields, tags, and tombstones for deletions. */
async function compare(db: Db, truth: TruthTable[]): Promise<Differences> {
  const found: Differences = { total: 0, counts: {}, examples: {} }
  const note = (table: string, kind: Kind, id: number) => {
    found.total++
    const counts = found.counts[table] ?? {}
    counts[kind] = (counts[kind] ?? 0) + 1
    found.counts[table] = counts
    const examples = found.examples[table] ?? {}
    const ids = examples[kind] ?? []
    if (ids.length < 3) ids.push(id)
    examples[kind] = ids
    found.examples[table] = examples
  }
  for (const { table, live, deleted } of truth) {
    const columns = sql.join(table.fields.map((field) => sql.ref(field)))
    const { rows } = await sql<MirrorRow>`
      select id, updated_at, _deleted_at, ${columns} from ${sql.table(table.table)}
    `.execute(db)
    const mirror = new Map(rows.map((row) => [Number(row.id), row]))
    let tags = new Map<number, string>()
    if (table.tags) {
      const { rows: tagRows } = await sql<{ parent: number | string; names: string }>`
        select _parent_id as parent, string_agg(name, ${'\u0001'}) as names from crm.tags
        where _parent_resource = ${table.table} group by _parent_id
      `.execute(db)
      tags = new Map(tagRows.map((row) => [Number(row.parent), row.names.split('\u0001').sort().join(',')]))
    }
    for (const [id, record] of live) {
      const row = mirror.get(id)
      if (!row) {
        note(table.table, 'missing', id)
        continue
      }
      if (row._deleted_at) {
        note(table.table, 'tombstoned', id)
        continue
      }
      if (row.updated_at?.getTime() !== record.updatedAt) note(table.table, 'updatedAt', id)
      else if (table.fields.some((field, i) => text(row[field]) !== record.fields[i]))
        note(table.table, 'fields', id)
      if (table.tags && (tags.get(id) ?? '') !== record.tags) note(table.table, 'tags', id)
    }
    for (const [id, row] of mirror) {
      if (row._deleted_at || live.has(id)) continue
      note(table.table, deleted.has(id) ? 'notDeleted' : 'unknown', id)
    }
  }
  return found
}

/** Differences per table, e.g. `crm.tasks 17, reservations.bookings 43`. */
function perTable(differences: Differences): string {
  return Object.entries(differences.counts)
    .map(([table, kinds]) => `${table} ${Object.values(kinds).reduce((sum, n) => sum + (n ?? 0), 0)}`)
    .join(', ')
}

function describe(differences: Differences): string {
  return Object.entries(differences.counts)
    .flatMap(([table, kinds]) =>
      Object.entries(kinds).map(
        ([kind, count]) =>
          `${table} ${KINDS[kind as Kind]}: ${count} (e.g. ${(differences.examples[table]?.[kind as Kind] ?? []).join(', ')})`,
      ),
    )
    .join('; ')
}

// ---- the changes --------------------------------------------------------------------------------

/** A small deterministic random source, so that a run can be replayed. */
function random(seed: number) {
  let state = seed >>> 0 || 1
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

type Hooked = 'people' | 'companies' | 'deals' | 'projects'
const HOOKED: [Hooked, number][] = [
  ['people', 0.45],
  ['companies', 0.15],
  ['deals', 0.25],
  ['projects', 0.15],
]
const DEAL_STATES = ['open_0', 'open_25', 'open_50', 'open_75', 'won', 'lost']
const PROJECT_STATES = ['ready', 'open', 'closed']
const BOOKING_STATES = ['open', 'accepted', 'declined', 'completed']

/** The share of each kind of change (they add up to 1). */
const MIX = [
  ['update', 0.21],
  ['tag', 0.1],
  // Avatars and connections of people and companies (silent by default, as tags are), status changes
  // of deals and projects (`change_status`: silent by default), merges of people and of companies
  // (the losers vanish silently; their tasks, notes and memberships move to the winner).
  ['avatar', 0.03],
  ['connection', 0.03],
  ['status', 0.02],
  ['merge', 0.01],
  ['untag', 0.06],
  ['create', 0.08],
  ['destroy', 0.06],
  ['task.update', 0.08],
  ['task.destroy', 0.04],
  ['task.create', 0.03],
  ['contact.update', 0.06],
  ['booking.update', 0.1],
  ['contact.destroy', 0.03],
  ['booking.destroy', 0.04],
  ['contact.create', 0.01],
  ['booking.create', 0.01],
] as const

const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)

function changeMaker(sandbox: Sandbox, seed: number) {
  const next = random(seed)
  const { crm, reservation } = sandbox.control
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(next() * items.length)]
  const weighted = <T>(items: readonly (readonly [T, number])[]): T => {
    let roll = next()
    for (const [item, weight] of items) {
      roll -= weight
      if (roll < 0) return item
    }
    return (items[items.length - 1] as readonly [T, number])[0]
  }
  const hookedUpdate = (collection: Hooked, id: number, i: number) => {
    if (collection === 'deals' && next() < 0.5) crm.update('deals', id, { current_state: pick(DEAL_STATES) })
    else if (collection === 'projects' && next() < 0.5)
      crm.update('projects', id, { current_state: pick(PROJECT_STATES) })
    else if (collection === 'people' && next() < 0.3) crm.update('people', id, { first_name: `First ${i}` })
    else crm.update(collection, id, { name: `Changed ${collection} ${i}` })
    return `${collection}.update`
  }
  const create = (collection: Hooked, i: number) => {
    const name = `New ${collection} ${i}`
    if (collection === 'deals') {
      crm.create('deals', {
        name,
        value: 1000 + Math.round(next() * 50_000),
        value_type: 'Total',
        value_count: 1,
        target_date: inDays(30),
        currency: 'EUR',
      })
    } else if (collection === 'projects') crm.create('projects', { name, target_date: inDays(60) })
    else crm.create(collection, { name })
    return `${collection}.create`
  }

  /** An avatar or connection change of a person or company, a status change, or a merge. */
  function sideChange(kind: 'avatar' | 'connection' | 'status' | 'merge', collection: Hooked, i: number) {
    if (kind === 'status') {
      const states = collection === 'projects' ? 'projects' : 'deals'
      const id = pick(crm.liveIds(states))
      if (id === undefined) return create(states, i)
      crm.changeStatus(states, id, pick(states === 'deals' ? DEAL_STATES : PROJECT_STATES) as string)
      return `${states}.status`
    }
    const contacts = collection === 'companies' ? 'companies' : 'people'
    const ids = crm.liveIds(contacts)
    const id = pick(ids)
    if (id === undefined) return create(contacts, i)
    if (kind === 'merge') {
      const losers = [pick(ids), pick(ids)].filter(
        (loser): loser is number => loser !== undefined && loser !== id,
      )
      if (losers.length === 0) return hookedUpdate(contacts, id, i)
      crm.merge(contacts, id, [...new Set(losers)])
      return `${contacts}.merge`
    }
    if (kind === 'avatar') crm.setAvatar(contacts, id, next() < 0.8 ? { filename: `bild-${i}.jpg` } : null)
    else crm.addConnection(contacts, id, { network: 'xing', url: `https://x.example/${i}` })
    return `${contacts}.${kind}`
  }

  /** One change; returns what it was, e.g. `people.destroy`. */
  function change(i: number): string {
    const kind = weighted(MIX)
    const collection = weighted(HOOKED)
    if (kind === 'create') return create(collection, i)
    if (kind === 'avatar' || kind === 'connection' || kind === 'status' || kind === 'merge')
      return sideChange(kind, collection, i)
    if (kind === 'update' || kind === 'tag' || kind === 'untag' || kind === 'destroy') {
      const id = pick(crm.liveIds(collection))
      if (id === undefined) return create(collection, i)
      if (kind === 'update') return hookedUpdate(collection, id, i)
      if (kind === 'destroy') {
        crm.destroy(collection, id)
        return `${collection}.destroy`
      }
      const tags = (crm.get(collection, id)?.tags ?? []) as { id: number; name: string }[]
      const first = tags[0]
      if (kind === 'untag' && first) {
        crm.removeTag(collection, id, first.id)
        return `${collection}.untag`
      }
      const name = `tag-${i % 11}`
      if (tags.some((tag) => tag.name === name)) return hookedUpdate(collection, id, i)
      crm.addTag(collection, id, name)
      return `${collection}.tag`
    }
    if (kind.startsWith('task.')) {
      const id = pick(crm.liveIds('tasks'))
      if (kind === 'task.create' || id === undefined) {
        const person = pick(crm.liveIds('people'))
        crm.create('tasks', {
          name: `Call back ${i}`,
          ...(person === undefined ? {} : { attachable_type: 'Person', attachable_id: person }),
        })
        return 'tasks.create'
      }
      if (kind === 'task.destroy') crm.destroy('tasks', id)
      else crm.update('tasks', id, { name: `Task ${i}` })
      return kind === 'task.destroy' ? 'tasks.destroy' : 'tasks.update'
    }
    const contact = pick(reservation.liveIds('contacts'))
    if (kind === 'contact.create' || contact === undefined) {
      reservation.create('contacts', { first: 'New', last: `Guest ${i}` })
      return 'contacts.create'
    }
    if (kind === 'contact.update') {
      reservation.update('contacts', contact, next() < 0.5 ? { last: `Guest ${i}` } : { first: `Given ${i}` })
      return 'contacts.update'
    }
    if (kind === 'contact.destroy') {
      reservation.destroy('contacts', contact)
      return 'contacts.destroy'
    }
    const booking = pick(reservation.liveIds('bookings'))
    if (kind === 'booking.create' || booking === undefined) {
      const like = booking === undefined ? undefined : reservation.get('bookings', booking)
      reservation.create('bookings', {
        type: 'SingleBooking',
        area_id: Number(like?.area_id ?? 1),
        contact_id: contact,
        date: inDays(1 + Math.floor(next() * 60)),
        hour: 12 + Math.floor(next() * 10),
        minute: 30,
        number_guests: 1 + Math.floor(next() * 8),
      })
      return 'bookings.create'
    }
    if (kind === 'booking.destroy') {
      reservation.destroy('bookings', booking)
      return 'bookings.destroy'
    }
    reservation.update(
      'bookings',
      booking,
      next() < 0.5 ? { number_guests: 1 + Math.floor(next() * 12) } : { status: pick(BOOKING_STATES) },
    )
    return 'bookings.update'
  }

  return {
    /** Makes change `i`; a change the sandbox refuses is counted as `refused` and not made. */
    make(i: number): string {
      try {
        return change(i)
      } catch (error) {
        if (error instanceof SandboxError) return 'refused'
        throw error
      }
    },
  }
}

// ---- one case -----------------------------------------------------------------------------------

interface Spent {
  crm: number
  reservation: number
  crm429: number
  reservation429: number
  /**
   * Seconds of quiet the upstream's own 429s asked for (the injected ones: their Retry-After, overlaps
   * counted once); not those of its rate limit, which an engine within its budget never meets.
   */
  crmPaused: number
  reservationPaused: number
}

const spentSince = (now: Counters, before: Counters): Spent => ({
  crm: now.crm.requests - before.crm.requests,
  reservation: now.reservation.requests - before.reservation.requests,
  crm429: (now.crm.statuses['429'] ?? 0) - (before.crm.statuses['429'] ?? 0),
  reservation429: (now.reservation.statuses['429'] ?? 0) - (before.reservation.statuses['429'] ?? 0),
  crmPaused: (now.crm.injectedRetryAfterMs - before.crm.injectedRetryAfterMs) / 1000,
  reservationPaused: (now.reservation.injectedRetryAfterMs - before.reservation.injectedRetryAfterMs) / 1000,
})

interface Wait {
  /** Seconds until converged, or null when the deadline passed first. */
  seconds: number | null
  /** Seconds until the mirror first matched the truth (deliveries may still have been on their way). */
  firstMatch: number | null
  /** What differed at the end (empty when converged). */
  differences: Differences
  /** [seconds, differences] about every 10 s. */
  timeline: [number, number][]
  polls: number
  /** Milliseconds of the slowest comparison. */
  slowestCompareMs: number
  /** Full comparisons made (each once the quick one matched and no delivery was left). */
  fullChecks: number
  /** What the last full comparison that disagreed found (empty: none did). */
  fullDiffering: string[]
}

/**
 * Compares the mirror with `truth` about every second, from `since` (performance.now()), until it
 * matches with no delivery on its way or waiting in the inbox, or `deadlineSeconds` pass.
 */
async function waitForConvergence(
  db: Db,
  sandbox: Sandbox,
  truth: TruthTable[],
  since: number,
  deadlineSeconds: number,
  log: (message: string) => void,
): Promise<Wait> {
  const timeline: [number, number][] = []
  let fullChecks = 0
  let fullDiffering: string[] = []
  let firstMatch: number | null = null
  let polls = 0
  let slowest = 0
  let lastLogged = -Infinity
  const waited = (seconds: number | null, differences: Differences): Wait => ({
    seconds,
    firstMatch,
    differences,
    timeline,
    polls,
    slowestCompareMs: round(slowest),
    fullChecks,
    fullDiffering,
  })
  for (;;) {
    const pollStart = performance.now()
    const differences = await compare(db, truth)
    slowest = Math.max(slowest, performance.now() - pollStart)
    polls++
    const elapsed = (performance.now() - since) / 1000
    if (differences.total === 0) {
      firstMatch ??= elapsed
      const pending = sandbox.control.pendingDeliveries()
      const inbox = pending === 0 ? (await readInboxBacklog(db)).depth : 1
      // Then the tests' full comparison (sandbox/mirror-truth.ts: every simulated table, its fields and
      // children, and what records name by id: a merge moves tasks and memberships to the winner) says
      // whether it is converged; until it does, the wait goes on.
      const full =
        pending === 0 && inbox === 0 ? await compareMirror(db, sandbox, { limit: 5, references: true }) : null
      if (full) fullChecks++
      if (full && !converged(full)) fullDiffering = describeTruth(full, 5)
      if (full && converged(full)) {
        const seconds = (performance.now() - since) / 1000
        timeline.push([round(seconds, 1), 0])
        return waited(seconds, differences)
      }
    }
    if (elapsed - (timeline.at(-1)?.[0] ?? -Infinity) >= 10)
      timeline.push([round(elapsed, 1), differences.total])
    if (elapsed - lastLogged >= 30) {
      lastLogged = elapsed
      log(
        `  ${round(elapsed)} s: ${differences.total} differences${differences.total ? ` (${perTable(differences)})` : ''}`,
      )
    }
    if (elapsed >= deadlineSeconds) {
      timeline.push([round(elapsed, 1), differences.total])
      return waited(null, differences)
    }
    await sleep(Math.max(0, 1000 - (performance.now() - pollStart)))
  }
}

async function runsSince(db: Db, since: Date) {
  const { rows } = await sql<{ mode: string; status: string; n: number }>`
    select mode, status, count(*)::int as n from sync.runs where created_at >= ${since} group by mode, status
  `.execute(db)
  return Object.fromEntries(rows.map((row) => [`${row.mode} ${row.status}`, row.n]))
}

/** The sweeps of the runs created since `since`, per resource; what the engine did to converge. */
async function sweepsSince(db: Db, since: Date) {
  try {
    const { rows } = await sql<Record<string, unknown> & { resource: string }>`
      select rr.resource, count(*)::int as sweeps,
        count(*) filter (where rr.status = 'succeeded')::int as succeeded,
        count(*) filter (where rr.status = 'failed')::int as failed,
        count(*) filter (where rr.status in ('queued', 'running'))::int as unfinished,
        coalesce(sum(rr.api_requests), 0)::int as requests, coalesce(sum(rr.pages), 0)::int as pages,
        coalesce(sum(rr.reconciled), 0)::int as reconciled, coalesce(sum(rr.tombstoned), 0)::int as tombstoned,
        max(rr.error) as error
      from sync.run_resources rr join sync.runs r on r.id = rr.run_id
      where r.created_at >= ${since} group by rr.resource order by rr.resource
    `.execute(db)
    return Object.fromEntries(rows.map(({ resource, ...rest }) => [resource, rest]))
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

/**
 * Every sweep since `since` that read a page or checked a record, in order of start, with its start
 * and end in seconds from the last change: where the time after the changes went.
 */
async function sweepLog(db: Db, since: Date, lastChangeAt: Date) {
  try {
    const { rows } = await sql<Record<string, unknown>>`
      select rr.run_id as run, r.mode, rr.resource, rr.status, rr.api_requests as requests, rr.pages,
        rr.reconciled, rr.tombstoned,
        round(extract(epoch from rr.started_at - ${lastChangeAt}::timestamptz)::numeric, 1)::float as started,
        round(extract(epoch from rr.finished_at - ${lastChangeAt}::timestamptz)::numeric, 1)::float as finished
      from sync.run_resources rr join sync.runs r on r.id = rr.run_id
      where r.created_at >= ${since} and (rr.pages > 0 or rr.reconciled > 0)
      order by rr.started_at
    `.execute(db)
    return rows
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

/** Record refreshes (one `show` each for lean and flat hooks) created since `since`, by state. */
async function refreshesSince(db: Db, since: Date) {
  try {
    const { rows } = await sql<{ state: string; n: number }>`
      select state, count(*)::int as n from ${sql.table(`${JOB_SCHEMA}.job`)}
      where name = ${QUEUES.refresh.name} and created_on >= ${since} group by state
    `.execute(db)
    return Object.fromEntries(rows.map((row) => [row.state, row.n]))
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

async function measure(ctx: Context, settings: Settings, objectType: ObjectType, hostile: boolean) {
  const label = `${objectType}, ${hostile ? 'hostile faults' : 'no faults'}`
  const defaults = engineDefaults()
  const reservationBudget = {
    requests: defaults.reservation.requests,
    windowSeconds: defaults.reservation.windowSeconds,
  }
  const sandbox = await startSandbox({
    seedSize: settings.sizes as SeedCount,
    seed: settings.seed,
    ...(settings.ties ? { seedTies: settings.ties } : {}),
    behaviour: {
      crmRateLimit: CRM_BUDGET,
      reservationRateLimit: reservationBudget,
      maxPerpage: PAGE_SIZE,
      tieOrder: settings.tieOrder,
    },
    faults: withLatency(hostile ? HOSTILE : {}, settings.latency),
  })
  const database = await createBenchDatabase(ctx.server, `convergence_${objectType}`)
  const zero = sandbox.control.counters()
  const engineStart = performance.now()
  const startedAt = new Date()
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    hooks: true,
    env: {
      HOOK_OBJECT_TYPE: objectType,
      INCREMENTAL_SYNC_INTERVAL: String(INTERVAL_SECONDS),
      // Empty counts as unset: the default, nightly (engineEnv's own is 1 January).
      FULL_SYNC_CRON: '',
      ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
    },
  })
  try {
    await waitFor(async () => (sandbox.control.crm.hooks().length === 12 ? true : undefined), 'hooks', 60_000)
    ctx.log(`${label}: first sync of ${Object.values(settings.sizes).reduce((a, b) => a + b, 0)} records`)
    const first = await waitForConvergence(
      database.db,
      sandbox,
      snapshot(sandbox),
      engineStart,
      settings.firstDeadline,
      ctx.log,
    )
    const firstSpent = spentSince(sandbox.control.counters(), zero)
    const firstSweeps = await sweepsSince(database.db, startedAt)
    ctx.log(
      `${label}: first sync ${first.seconds === null ? `not converged within ${settings.firstDeadline} s` : `converged in ${round(first.seconds, 1)} s`}, CRM ${firstSpent.crm} requests, reservation ${firstSpent.reservation}`,
    )
    if (first.seconds === null) {
      return { label, objectType, hostile, first, firstSpent, firstSweeps, changes: null }
    }

    ctx.log(`${label}: ${settings.changes} changes over ${settings.seconds} s`)
    const maker = changeMaker(sandbox, settings.seed * 7919 + 11)
    const made: Record<string, number> = {}
    const beforeChanges = sandbox.control.counters()
    const changesStart = performance.now()
    const changesStartedAt = new Date()
    let late = 0
    for (let i = 0; i < settings.changes; i++) {
      const due = changesStart + (i * settings.seconds * 1000) / settings.changes
      const wait = due - performance.now()
      if (wait > 1) await sleep(wait)
      else if (wait < -1000) late++
      const what = maker.make(i)
      made[what] = (made[what] ?? 0) + 1
    }
    const lastChange = performance.now()
    const lastChangeAt = new Date()
    // "In sync" (DESIGN.md) allows one full reconciliation for the changes that leave updated_at alone
    // (a tag, an address: the sandbox's default fires no webhook and bumps no parent for them).
    const resync = await fetch(`${engine.url}/admin/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'full' }),
    })
    if (resync.status !== 202) throw new Error(`full resync refused: ${resync.status} ${await resync.text()}`)
    const atLastChange = sandbox.control.counters()
    const pendingAtLastChange = sandbox.control.pendingDeliveries()
    const truth = snapshot(sandbox)
    const changesMade = settings.changes - (made.refused ?? 0)
    ctx.log(
      `${label}: changes done in ${round((lastChange - changesStart) / 1000, 1)} s (${made.refused ?? 0} refused), ${pendingAtLastChange} deliveries pending; waiting up to ${settings.deadline} s`,
    )
    const after = await waitForConvergence(
      database.db,
      sandbox,
      truth,
      lastChange,
      settings.deadline,
      ctx.log,
    )
    const end = sandbox.control.counters()
    ctx.log(
      `${label}: ${after.seconds === null ? `NOT converged within ${settings.deadline} s: ${describe(after.differences)}` : `converged ${round(after.seconds, 1)} s after the last change`}`,
    )
    return {
      label,
      objectType,
      hostile,
      first,
      firstSpent,
      firstSweeps,
      changes: {
        made,
        changesMade,
        late,
        changeSeconds: (lastChange - changesStart) / 1000,
        pendingAtLastChange,
        after,
        duringChanges: spentSince(atLastChange, beforeChanges),
        afterChanges: spentSince(end, atLastChange),
        total: spentSince(end, beforeChanges),
        deliveries: {
          queued: end.deliveries.queued - beforeChanges.deliveries.queued,
          dropped: end.deliveries.dropped - beforeChanges.deliveries.dropped,
          duplicated: end.deliveries.duplicated - beforeChanges.deliveries.duplicated,
          delayed: end.deliveries.delayed - beforeChanges.deliveries.delayed,
          failed: end.deliveries.failed - beforeChanges.deliveries.failed,
        },
        upstreamAfter: Object.fromEntries(
          truth.map((t) => [t.table.table, { live: t.live.size, deleted: t.deleted.size }]),
        ),
        runs: await runsSince(database.db, changesStartedAt),
        runsSinceStart: await runsSince(database.db, startedAt),
        sweeps: await sweepsSince(database.db, changesStartedAt),
        sweepLog: await sweepLog(database.db, changesStartedAt, lastChangeAt),
        refreshes: await refreshesSince(database.db, changesStartedAt),
        engine: { cpuSeconds: round(engine.cpuSeconds(), 1), peakRssMb: round(engine.peakRss() / 2 ** 20) },
      },
    }
  } finally {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
}

type Measured = Awaited<ReturnType<typeof measure>>

/** What a wait that missed its deadline still found: the quick comparison's, else the full one's. */
const stillDiffering = (wait: Wait) =>
  wait.differences.total > 0 ? describe(wait.differences) : wait.fullDiffering.join('; ')

function figuresOf(
  measured: Measured,
  settings: Settings,
  reservationBudget: { requests: number; windowSeconds: number },
): Figure[] {
  const { label, first, firstSpent, changes } = measured
  const bound = firstSyncBound(settings.sizes, reservationBudget)
  const sweep = { value: bound.seconds, unit: 's', digits: 1, label: bound.label }
  const missed = (deadline: number): Target => ({
    text: 'converged within the deadline',
    pass: false,
    by: `not converged in ${deadline} s`,
  })
  const figures: Figure[] = [
    {
      measure: `${label}: first sync, engine start to converged`,
      value: first.seconds ?? settings.firstDeadline,
      unit: 's',
      digits: 1,
      reference: sweep,
      ...(first.seconds === null ? { target: missed(settings.firstDeadline) } : {}),
      bound:
        `CRM ${firstSpent.crm} requests (${firstSpent.crm429} answered 429), reservation ${firstSpent.reservation} (${firstSpent.reservation429} 429); ${engineSweep(settings.sizes, engineDefaults())}` +
        (first.seconds === null ? `; still differing: ${stillDiffering(first)}` : ''),
    },
  ]
  if (!changes) return figures
  const { after, total, duringChanges, afterChanges, changesMade } = changes
  // What no engine can skip after the changes: the resources without webhooks read to their last page
  // (silent deletions show only there), and one show per record deleted silently (the contract: a
  // record missing from a sweep is deleted only after show answers 404), each service at its budget.
  const pass = silentPass(changes.upstreamAfter, reservationBudget, afterChanges)
  const passGoal = INTERVAL_SECONDS + pass.seconds
  const passText = `converged within one interval plus the pass after the changes (≤ ${round(passGoal, 1)} s)`
  const windowSeconds = changes.changeSeconds + (after.seconds ?? settings.deadline)
  const untilText = after.seconds === null ? `until the deadline (${settings.deadline} s)` : 'until converged'
  figures.push(
    {
      measure: `${label}: last change to converged (${changesMade} changes in ${round(changes.changeSeconds)} s)`,
      value: after.seconds ?? settings.deadline,
      unit: 's',
      digits: 1,
      target:
        after.seconds === null
          ? { text: passText, pass: false, by: `not converged in ${settings.deadline} s` }
          : atMost(after.seconds, passGoal, passText),
      bound:
        after.seconds === null
          ? `not converged; still differing: ${stillDiffering(after)}`
          : `mirror first matched after ${round(after.firstMatch ?? after.seconds, 1)} s; ${changes.pendingAtLastChange} deliveries still on their way at the last change; ` +
            `the target's pass (not a bound: an engine reads during the changes, and cascades need no show): ${pass.label}, ${round(pass.seconds, 1)} s`,
    },
    {
      measure: `${label}: CRM requests, changes ${untilText}`,
      value: total.crm,
      unit: '',
      reference: {
        value: Math.floor((windowSeconds * CRM_BUDGET.requests) / CRM_BUDGET.windowSeconds),
        unit: '',
        label: `the budget over those ${round(windowSeconds)} s`,
      },
      bound: `${duringChanges.crm} during the changes, ${afterChanges.crm} after; ${total.crm429} answered 429`,
    },
    {
      measure: `${label}: reservation requests, changes ${untilText}`,
      value: total.reservation,
      unit: '',
      reference: {
        value: Math.floor((windowSeconds * reservationBudget.requests) / reservationBudget.windowSeconds),
        unit: '',
        label: `the budget over those ${round(windowSeconds)} s`,
      },
      bound: `${duringChanges.reservation} during the changes, ${afterChanges.reservation} after; ${total.reservation429} answered 429`,
    },
    {
      measure: `${label}: requests per change, changes ${untilText}`,
      value: (total.crm + total.reservation) / changesMade,
      unit: '',
      digits: 2,
    },
  )
  return figures
}

/**
 * What the pass after the changes reads: every page of the CRM's mirrored resources once (the full
 * reconciliation asked for at the last change), and of the reservation service's; the resources no
 * webhook announces also have silent deletions, each confirmed by a show.
 */
const PASS = {
  crm: ['crm.people', 'crm.companies', 'crm.deals', 'crm.projects', 'crm.tasks'],
  reservation: ['reservations.contacts', 'reservations.bookings'],
}
const SILENT = new Set(['crm.tasks', 'reservations.contacts', 'reservations.bookings'])

/**
 * Seconds the budgets need for every page of the silent resources and a show per silent deletion, plus
 * the time the upstream's 429s after the last change asked every client to send nothing.
 */
function silentPass(
  upstream: Record<string, { live: number; deleted: number }>,
  reservationBudget: { requests: number; windowSeconds: number },
  paused: Pick<Spent, 'crmPaused' | 'reservationPaused'>,
): { seconds: number; label: string } {
  const requests = (tables: string[]) =>
    tables.reduce((sum, table) => {
      const { live = 0, deleted = 0 } = upstream[table] ?? {}
      return sum + Math.ceil((live + deleted) / PAGE_SIZE) + (SILENT.has(table) ? deleted : 0)
    }, 0)
  const crm = requests(PASS.crm)
  const reservation = requests(PASS.reservation)
  const seconds = Math.max(
    crm / (CRM_BUDGET.requests / CRM_BUDGET.windowSeconds) + paused.crmPaused,
    reservation / (reservationBudget.requests / reservationBudget.windowSeconds) + paused.reservationPaused,
  )
  const pauses =
    paused.crmPaused + paused.reservationPaused > 0
      ? `, plus the Retry-After pauses of the upstream's own 429s (CRM ${round(paused.crmPaused, 1)} s, reservation ${round(paused.reservationPaused, 1)} s)`
      : ''
  return {
    seconds,
    label: `a full reconciliation (every page once) and a show per silent deletion: CRM ${crm}, reservation ${reservation} requests at 5/s${pauses}`,
  }
}

async function run(ctx: Context) {
  const settings = settingsOf(ctx)
  const defaults = engineDefaults()
  const figures: Figure[] = []
  const details: Record<string, unknown> = {}
  for (const objectType of settings.hooks) {
    for (const hostile of settings.faults) {
      const measured = await measure(ctx, settings, objectType, hostile)
      figures.push(...figuresOf(measured, settings, defaults.reservation))
      details[measured.label] = measured
    }
  }
  return {
    settings: {
      scale: `${settings.scale}x`,
      sizes: settings.sizes,
      changes: `${settings.changes} over ${settings.seconds} s (${MIX.map(([kind, share]) => `${kind} ${Math.round(share * 100)}%`).join(', ')}; people 45%, companies 15%, deals 25%, projects 15% of the CRM's)`,
      faults: `${settings.faults.map((on) => (on ? 'hostile' : 'none')).join(' and ')}; hostile: ${JSON.stringify(HOSTILE)}`,
      budget: `CRM ${CRM_BUDGET.requests} / ${CRM_BUDGET.windowSeconds} s, reservation ${defaults.reservation.requests} / ${defaults.reservation.windowSeconds} s (engine defaults, enforced by the sandbox too); sandbox pages at most ${PAGE_SIZE}; engine page sizes CRM ${defaults.crm.pageSize}, reservation ${defaults.reservation.pageSize} (defaults)`,
      latency:
        settings.latency.max === 0
          ? 'none added (loopback)'
          : `every upstream call ${settings.latency.min}-${settings.latency.max} ms (uniform)`,
      engine: `its own process, INCREMENTAL_SYNC_INTERVAL ${INTERVAL_SECONDS}, FULL_SYNC_CRON default (nightly), every other setting its default (the activity feed and newest-page polls on)`,
      converged:
        'mirror = sandbox (live ids, updated_at, fields, tags, deletions tombstoned; compared every second), no delivery pending or in the inbox, and then the full comparison of the tests (sandbox/mirror-truth.ts: every simulated table, fields and children, references by id) agrees',
      deadline: `${settings.deadline} s after the last change (first sync ${settings.firstDeadline} s)`,
      seed: settings.seed,
      ties: `${settings.ties ? `bulk edits of ${settings.ties} records sharing one updated_at` : "the seed's own bursts only"}; ties ordered ${settings.tieOrder === 'shuffled' ? 'anew on every request' : 'by id'}`,
    },
    figures,
    details,
  }
}

export const convergence: Scenario = {
  name: 'convergence',
  title: 'Convergence at scale',
  optIn: true,
  options: OPTIONS,
  run,
}
