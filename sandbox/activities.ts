// The CRM's activity log (/api/activities): an entry for every create, update and destroy of a person,
// company, deal, project, task or note, written by the account itself (crm-account.ts), never changed and
// never deleted. Read only: no writes through the API. `attachable_type` and `attachable_id` name the
// object (a note as `Protocol`); `change` holds `{ <wrapper>: { action, changes: { field: [old, new] } } }`.
// What a destroy cascades to (a person's tasks and notes) is not logged: the upstream deletes those silently.
//
// The index is newest first (created_at, then id, descending), whatever `order` asks. `filter[...]` is
// ignored by default, the least helpful plausible behaviour (the clients that send
// `filter[created_at][larger_than]` do not show that it works); the behaviour `activityFilters:
// 'honoured'` is the kinder variant a test names. Pages follow `perpage` and `page` like every CRM index.
import type { Behaviour } from './faults.ts'
import type { Ids } from './ids.ts'
import type { Actor, Kind } from './kind.ts'
import { type FieldFilter, matchesFilters } from './listing.ts'
import type { ActivityRow, ActivityVerb, Plural, Stamped } from './rows.ts'
import type { Generation } from './seeding.ts'
import { type Collection, insert, type Store } from './store.ts'

/** The kinds whose writes are logged, and the attachable type an activity names them by. */
export const LOGGED: Partial<Record<Plural, { type: string; key: string }>> = {
  people: { type: 'Person', key: 'person' },
  companies: { type: 'Company', key: 'company' },
  deals: { type: 'Deal', key: 'deal' },
  projects: { type: 'Project', key: 'project' },
  tasks: { type: 'Task', key: 'task' },
  protocols: { type: 'Protocol', key: 'protocol' },
}

// Fields that change with every write: not listed among the changes.
const UNLISTED = new Set(['updated_at', 'updated_by_user_id'])

/** The plain fields that differ between two states of a row, as `[old, new]` pairs. */
function changesBetween(before: object, after: object): Record<string, [unknown, unknown]> {
  const changes: Record<string, [unknown, unknown]> = {}
  const was = before as Record<string, unknown>
  for (const [key, value] of Object.entries(after)) {
    if (UNLISTED.has(key) || (typeof value === 'object' && value !== null)) continue
    if (was[key] !== value) changes[key] = [was[key] ?? null, value ?? null]
  }
  return changes
}

export interface LoggedWrite {
  plural: Plural
  verb: ActivityVerb
  row: Stamped
  /** The row before an update (a shallow copy). */
  before?: object
  actor: Actor
  /** Seconds. */
  now: number
}

/** Writes the activity of a write to one of the logged kinds; nothing for the others. */
export function logActivity(store: Store, ids: Ids, write: LoggedWrite): void {
  const logged = LOGGED[write.plural]
  if (!logged) return
  const action: Record<string, unknown> = { action: write.verb }
  if (write.verb === 'update' && write.before) action.changes = changesBetween(write.before, write.row)
  insert(store.activities, {
    id: ids.next('activity'),
    user_id: write.actor.userId,
    attachable_id: write.row.id,
    attachable_type: logged.type,
    verb: write.verb,
    confidential: false,
    change: { [logged.key]: action },
    created_at: write.now,
    updated_at: write.now,
  })
}

const newestFirstCache = new WeakMap<object, { version: number; rows: ActivityRow[] }>()

function newestFirst(from: Collection<ActivityRow>): ActivityRow[] {
  const cached = newestFirstCache.get(from)
  if (cached?.version === from.version) return cached.rows
  const rows = [...from.rows.values()].sort((a, b) => b.created_at - a.created_at || b.id - a.id)
  newestFirstCache.set(from, { version: from.version, rows })
  return rows
}

const refused = { ok: false as const, errors: { base: ['activities are written by the service'] } }

export const activityKind: Kind<ActivityRow> = {
  plural: 'activities',
  wrapper: 'activity',
  model: null,
  attachableType: null,
  includeOptions: [],
  readOnly: true,
  rows: (store) => store.activities,
  sortName: (row) => row.verb,
  searchRequires: null,
  matches: () => true,
  index(store: Store, filters: readonly FieldFilter[], behaviour: Behaviour) {
    const rows = newestFirst(store.activities)
    if (behaviour.activityFilters !== 'honoured' || filters.length === 0) return rows
    return rows.filter((row) => matchesFilters(row, filters))
  },
  render(view, row) {
    return {
      id: row.id,
      account_id: view.accountId,
      user_id: row.user_id,
      attachable_id: row.attachable_id,
      attachable_type: row.attachable_type,
      verb: row.verb,
      confidential: row.confidential,
      change: structuredClone(row.change),
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
    }
  },
  flat: (view, row) => activityKind.render(view, row, new Set()),
  create: () => refused,
  update: () => refused,
  /** `count` past creates of the records generated before (which come first in the table of kinds). */
  seed({ store, ids, random, count }: Generation) {
    const pool = Object.entries(LOGGED).flatMap(([plural, logged]) =>
      [...(store[plural as Plural].rows.values() as Iterable<Stamped>)].map((row) => ({ row, logged })),
    )
    const users = [...store.users.rows.keys()]
    for (let i = 0; i < count('activities') && pool.length; i++) {
      const { row, logged } = random.pick(pool)
      insert(store.activities, {
        id: ids.next('activity'),
        user_id: users.length ? random.pick(users) : null,
        attachable_id: row.id,
        attachable_type: logged.type,
        verb: 'create',
        confidential: false,
        change: { [logged.key]: { action: 'create' } },
        created_at: row.created_at,
        updated_at: row.created_at,
      })
    }
  },
}
