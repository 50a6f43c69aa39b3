// Notes ("protocols"): the CRM's global index /api/protocols, show, and writes. An answer wraps each
// note under the key of its concrete type (`ProtocolObjectNote` → `protocol_object_note`), so a note
// of a type never seen before comes under a key never seen before. The upstream sends no webhooks for
// them. A note is linked to any number of people, companies, deals and projects, and goes, silently,
// with any one of them (crm-account.ts).
import { z } from 'zod'
import type { FieldErrors } from './http.ts'
import {
  assignGiven,
  contains,
  flag,
  id,
  invalid,
  type Kind,
  longText,
  optionalId,
  text,
  unknownUser,
  type WriteContext,
} from './kind.ts'
import { linkReferences } from './relations.ts'
import { type AttachableType, NOTE_LINKS, type NoteRow } from './rows.ts'
import type { Generation } from './seeding.ts'
import { insert, type Store } from './store.ts'

export const NOTE_TYPES = ['ProtocolObjectNote', 'ProtocolUserNote', 'ProtocolAttachment'] as const
export const NOTE_FORMATS = ['plaintext', 'markdown', 'textile', 'html'] as const
export const NOTE_BADGES = ['note', 'call', 'email', 'meeting', 'other'] as const
const NOTE_NAMES = ['Telefonat', 'Besprechung', 'Angebot besprochen', 'Rückruf', 'Notiz', 'Testdatei']

/** `ProtocolObjectNote` → `protocol_object_note`: the key a note of that type is wrapped under. */
export const wrapperOfType = (type: string) => type.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase()

const links = z.array(id).transform((ids) => [...new Set(ids)])
const fields = {
  // The three types seen, or one the upstream may add, named like them.
  type: z
    .string()
    .regex(/^Protocol[A-Z][A-Za-z]*$/, 'is not a note type')
    .optional(),
  name: text(255),
  content: longText,
  format: z.enum(NOTE_FORMATS).optional(),
  confidential: flag.optional(),
  badge: z.enum(NOTE_BADGES).optional(),
  user_id: optionalId,
  person_ids: links.optional(),
  company_ids: links.optional(),
  deal_ids: links.optional(),
  project_ids: links.optional(),
}
const input = z.object(fields)

const collectionOf = (store: Store, type: AttachableType) =>
  type === 'Person'
    ? store.people
    : type === 'Company'
      ? store.companies
      : type === 'Deal'
        ? store.deals
        : store.projects

function references(data: z.output<typeof input>, context: WriteContext): FieldErrors | null {
  for (const { key, type } of NOTE_LINKS) {
    const rows = collectionOf(context.store, type).rows
    if (data[key]?.some((linked) => !rows.has(linked))) return { [key]: ['must exist'] }
  }
  return unknownUser(context.store, data.user_id)
}

export const notes: Kind<NoteRow> = {
  plural: 'protocols',
  wrapper: 'protocol',
  wrapperOf: (row) => wrapperOfType(row.type),
  model: null,
  attachableType: null,
  includeOptions: [],
  rows: (store) => store.protocols,
  sortName: (row) => row.name ?? '',
  searchRequires: 'name',
  matches: (row, query) => contains(row.name, query('name') ?? ''),
  render(view, row) {
    return {
      id: row.id,
      user_id: row.user_id,
      attachments_count: row.attachments_count,
      comments_count: row.comments_count,
      name: row.name,
      confidential: row.confidential,
      format: row.format,
      content: row.content,
      updated_by_user_id: row.updated_by_user_id,
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
      data_hash: {},
      account_id: view.accountId,
      type: row.type,
      badge: row.badge,
      person_ids: [...row.person_ids],
      company_ids: [...row.company_ids],
      deal_ids: [...row.deal_ids],
      project_ids: [...row.project_ids],
      person_id: row.person_ids[0] ?? null,
      company_id: row.company_ids[0] ?? null,
    }
  },
  flat: (view, row) => notes.render(view, row, new Set()),
  create(data, context) {
    const parsed = input.safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    const given = parsed.data
    const { now, actor } = context
    const row: NoteRow = {
      id: context.ids.next('protocol'),
      type: given.type ?? 'ProtocolObjectNote',
      user_id: given.user_id ?? actor.userId,
      updated_by_user_id: actor.userId,
      name: given.name ?? null,
      content: given.content ?? null,
      format: given.format ?? 'plaintext',
      confidential: given.confidential ?? false,
      badge: given.badge ?? 'note',
      attachments_count: 0,
      comments_count: 0,
      person_ids: given.person_ids ?? [],
      company_ids: given.company_ids ?? [],
      deal_ids: given.deal_ids ?? [],
      project_ids: given.project_ids ?? [],
      created_at: now,
      updated_at: now,
    }
    return { ok: true, row }
  },
  update(row, data, context) {
    const parsed = input.safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    const errors = references(parsed.data, context)
    if (errors) return invalid(errors)
    assignGiven(row, parsed.data as Partial<NoteRow>)
    row.updated_at = context.now
    row.updated_by_user_id = context.actor.userId
    return { ok: true, row }
  },
  seed({ store, ids, random, time, count }: Generation) {
    const users = [...store.users.rows.keys()]
    const candidates = NOTE_LINKS.map(({ key, type }) => ({
      key,
      ids: [...collectionOf(store, type).rows.keys()],
      chance: type === 'Person' ? 0.7 : type === 'Company' ? 0.4 : 0.15,
    }))
    for (let i = 0; i < count('protocols'); i++) {
      const created_at = time.created()
      const row: NoteRow = {
        id: ids.next('protocol'),
        type: random.chance(0.8) ? 'ProtocolObjectNote' : random.pick(NOTE_TYPES),
        user_id: users.length ? random.pick(users) : null,
        updated_by_user_id: users.length ? random.pick(users) : null,
        name: random.pick(NOTE_NAMES),
        content: random.chance(0.9) ? `Notiz ${i + 1}` : null,
        format: random.pick(NOTE_FORMATS),
        confidential: random.chance(0.1),
        badge: random.pick(NOTE_BADGES),
        attachments_count: random.chance(0.2) ? random.int(1, 3) : 0,
        comments_count: random.chance(0.2) ? random.int(1, 4) : 0,
        person_ids: [],
        company_ids: [],
        deal_ids: [],
        project_ids: [],
        created_at,
        updated_at: time.updated(created_at),
      }
      for (const { key, ids: linkable, chance } of candidates) {
        if (!linkable.length || !random.chance(chance)) continue
        const picked = Array.from({ length: random.chance(0.2) ? 2 : 1 }, () => random.pick(linkable))
        row[key] = [...new Set(picked)]
      }
      insert(store.protocols, row)
      linkReferences(store, 'protocols', row)
    }
  },
}
