// Filter groups: the CRM's saved filters. The index /api/filter_groups lists the groups (wrapped under
// `filter_group`), and /api/filter_groups/{id} answers a group's members, paged, each in the index form
// of the group's model type and wrapped like that index (`{ person: {...} }`). Membership is computed
// from the current records on every request: a rule (records whose name starts with one of some
// letters) or a fixed list of ids (those still live). A group's `element_count` is computed the same
// way; a change of membership leaves the group's `updated_at` alone, as a saved filter would. The
// upstream sends no webhooks for groups; the control API creates, changes and deletes them. The route
// of a group's members is in crm-filter-group-routes.ts.
import { z } from 'zod'
import { assignGiven, contains, id, invalid, type Kind, required } from './kind.ts'
import { createRandom } from './random.ts'
import { ATTACHABLE_TYPES, type AttachableType, type FilterGroupRow, type Stamped } from './rows.ts'
import type { Generation } from './seeding.ts'
import type { Store } from './store.ts'
import { stamp } from './view.ts'

/** The collection of a model type, by its plural. */
export const PLURAL_OF = {
  Person: 'people',
  Company: 'companies',
  Deal: 'deals',
  Project: 'projects',
} as const satisfies Record<AttachableType, string>

/** Groups seeded at most, whatever the count asks: an account has a handful of saved filters. */
const MAX_SEEDED = 6
const LETTER_SETS = ['ABCDEF', 'GHIJKLM', 'NOPQRS', 'TUVWXYZ', 'BKMS']
const LABELS: Record<AttachableType, string> = {
  Person: 'Kontakte',
  Company: 'Firmen',
  Deal: 'Angebote',
  Project: 'Projekte',
}

const fields = {
  name: required(255),
  model_type: z.enum(ATTACHABLE_TYPES),
  letters: z
    .string()
    .regex(/^[A-Za-z]+$/, 'is not a list of letters')
    .nullable()
    .optional(),
  member_ids: z.array(id).optional(),
}
const createInput = z.object(fields)
const updateInput = z.object(fields).partial()

const nameOf = (row: Stamped) => String((row as { name?: unknown }).name ?? '')

/** The group's members now, in id order. */
export function membersOf(store: Store, group: FilterGroupRow): Stamped[] {
  const rows: Map<number, Stamped> = store[PLURAL_OF[group.model_type]].rows
  let members: Stamped[]
  if (group.letters !== null) {
    const letters = group.letters.toUpperCase()
    members = [...rows.values()].filter((row) => letters.includes(nameOf(row).charAt(0).toUpperCase()))
  } else {
    members = group.member_ids.flatMap((memberId) => rows.get(memberId) ?? [])
  }
  return members.sort((a, b) => a.id - b.id)
}

export const filterGroups: Kind<FilterGroupRow> = {
  plural: 'filter_groups',
  wrapper: 'filter_group',
  model: null,
  attachableType: null,
  includeOptions: [],
  rows: (store) => store.filter_groups,
  sortName: (row) => row.name,
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render(view, row) {
    return {
      id: row.id,
      account_id: view.accountId,
      model_type: row.model_type,
      name: row.name,
      element_count: membersOf(view.store, row).length,
      created_at: stamp(view, row.created_at),
      updated_at: stamp(view, row.updated_at),
    }
  },
  flat: (view, row) => filterGroups.render(view, row, new Set()),
  create(data, context) {
    const parsed = createInput.safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    const given = parsed.data
    const row: FilterGroupRow = {
      id: context.ids.next('filter_group'),
      name: given.name,
      model_type: given.model_type,
      letters: given.letters ?? null,
      member_ids: [...new Set(given.member_ids ?? [])],
      created_at: context.now,
      updated_at: context.now,
    }
    return { ok: true, row }
  },
  update(row, data, context) {
    const parsed = updateInput.safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    assignGiven(row, parsed.data as Partial<FilterGroupRow>)
    if (parsed.data.letters === null) row.letters = null
    row.updated_at = context.now
    return { ok: true, row }
  },
  seed({ store, ids, count, options }: Generation) {
    // A stream of its own: the groups change nothing that the other kinds generate.
    const random = createRandom(options.seed ^ 0x0f17e6)
    const types: AttachableType[] = ['Person', 'Company', 'Person', 'Deal', 'Project', 'Person']
    for (let i = 0; i < Math.min(count('filter_groups'), MAX_SEEDED); i++) {
      const model_type = types[i % types.length] as AttachableType
      const byIds = i % 3 === 2
      const candidates = [...store[PLURAL_OF[model_type]].rows.keys()]
      const letters = byIds ? null : random.pick(LETTER_SETS)
      const member_ids =
        byIds && candidates.length ? [...new Set([1, 2, 3, 4, 5].map(() => random.pick(candidates)))] : []
      const created_at = options.now - random.int(3600, 365 * 86_400)
      const groups = store.filter_groups
      const id = ids.next('filter_group')
      groups.version++
      groups.rows.set(id, {
        id,
        name: `${LABELS[model_type]} ${letters ?? 'Auswahl'} ${i + 1}`,
        model_type,
        letters,
        member_ids,
        created_at,
        updated_at: random.chance(0.5) ? created_at : random.int(created_at, options.now - 60),
      })
    }
  },
}
