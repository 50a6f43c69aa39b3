// Attachments: the files attached to notes and records, listed by the CRM's global index
// /api/attachments. Each record carries its `uuid` (the key clients use) beside a numeric `id`, and
// the file itself, Base64, in `data`, as the real listings do; the upstream sends no webhooks for them.
// Rows keep the file's size, not the file: `data` is made from the row when it is shown (a file given
// on create is kept as given), so that seeding thousands of them costs little memory.
import { z } from 'zod'
import type { FieldErrors } from './http.ts'
import { assignGiven, contains, invalid, type Kind, optionalId, required, unknownUser } from './kind.ts'
import { ATTACHMENT_TARGETS, type AttachmentRow, type AttachmentTarget } from './rows.ts'
import type { Generation } from './seeding.ts'
import { insert, type Store } from './store.ts'

const CONTENT_TYPES = [
  ['application/pdf', 'pdf'],
  ['image/png', 'png'],
  ['image/jpeg', 'jpg'],
  ['text/plain', 'txt'],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
] as const
const FILE_NAMES = ['Angebot', 'Vertrag', 'Rechnung', 'Foto', 'Protokoll', 'Testdatei']
const CATEGORIES = [5101, 5102, 5103]

/** A uuid made from the row's id: unique as the id is, and in no order of the ids. */
export function uuidOf(id: number): string {
  const hex = (value: number, length: number) =>
    (value >>> 0).toString(16).padStart(length, '0').slice(-length)
  const a = Math.imul(id, 2_654_435_761)
  const b = Math.imul(id ^ 0x5bd1e995, 40_503)
  return `${hex(a, 8)}-${hex(b, 4)}-4${hex(b >>> 16, 3)}-a${hex(a >>> 20, 3)}-${id.toString(16).padStart(12, '0')}`
}

/** The file of a row as the listing shows it: Base64 of `size` bytes made from the row, or as given. */
export function attachmentData(row: AttachmentRow): string {
  if (row.data !== undefined) return row.data
  const line = `${row.uuid} ${row.filename}\n`
  return Buffer.from(line.repeat(Math.ceil(row.size / line.length)).slice(0, row.size)).toString('base64')
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const input = z.object({
  data: z.string().regex(BASE64, 'is not Base64').optional(),
  content_type: z.string().max(255).optional(),
  original_filename: required(255).optional(),
  attachment_category_id: optionalId,
  attachable_type: z.enum(ATTACHMENT_TARGETS).optional(),
  attachable_id: optionalId,
  user_id: optionalId,
})

const targetRows = (store: Store, type: AttachmentTarget) =>
  type === 'Protocol'
    ? store.protocols
    : type === 'Person'
      ? store.people
      : type === 'Company'
        ? store.companies
        : type === 'Deal'
          ? store.deals
          : store.projects

function references(data: z.output<typeof input>, store: Store): FieldErrors | null {
  if ((data.attachable_type === undefined) !== (data.attachable_id == null))
    return { attachable: ['needs both attachable_type and attachable_id'] }
  if (data.attachable_type && data.attachable_id != null) {
    if (!targetRows(store, data.attachable_type).rows.has(data.attachable_id))
      return { attachable_id: ['must exist'] }
  }
  return unknownUser(store, data.user_id)
}

export const attachments: Kind<AttachmentRow> = {
  plural: 'attachments',
  wrapper: 'attachment',
  model: null,
  attachableType: null,
  includeOptions: [],
  rows: (store) => store.attachments,
  sortName: (row) => row.filename,
  searchRequires: 'filename',
  matches: (row, query) => contains(row.filename, query('filename') ?? ''),
  render(view, row) {
    return {
      id: row.id,
      uuid: row.uuid,
      account_id: view.accountId,
      user_id: row.user_id,
      attachable_id: row.attachable_id,
      attachable_type: row.attachable_type,
      content_type: row.content_type,
      filename: row.filename,
      attachment_category_id: row.attachment_category_id,
      created_at: view.time(row.created_at),
      updated_at: view.time(row.updated_at),
      data: attachmentData(row),
    }
  },
  flat: (view, row) => attachments.render(view, row, new Set()),
  create(data, context) {
    const parsed = input.safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    const given = parsed.data
    const errors =
      given.data === undefined
        ? { data: ["can't be blank"] }
        : given.original_filename === undefined
          ? { original_filename: ["can't be blank"] }
          : references(given, context.store)
    if (errors) return invalid(errors)
    const id = context.ids.next('attachment')
    const file = given.data ?? ''
    const row: AttachmentRow = {
      id,
      uuid: uuidOf(id),
      user_id: given.user_id ?? context.actor.userId,
      attachable_id: given.attachable_id ?? null,
      attachable_type: given.attachable_type ?? null,
      content_type: given.content_type ?? 'application/octet-stream',
      filename: given.original_filename ?? '',
      attachment_category_id: given.attachment_category_id ?? null,
      size: Buffer.byteLength(file, 'base64'),
      data: file,
      created_at: context.now,
      updated_at: context.now,
    }
    return { ok: true, row }
  },
  /** Renaming (or recategorising) a file, as a user of the UI can; the file itself stays. */
  update(row, data, context) {
    const parsed = input.pick({ original_filename: true, attachment_category_id: true }).safeParse(data)
    if (!parsed.success) return invalid(parsed.error, data)
    const { original_filename: filename, attachment_category_id } = parsed.data
    assignGiven(row, { filename, attachment_category_id } as Partial<AttachmentRow>)
    row.updated_at = context.now
    return { ok: true, row }
  },
  seed({ store, ids, random, time, count, options }: Generation) {
    const users = [...store.users.rows.keys()]
    const notes = [...store.protocols.rows.keys()]
    const people = [...store.people.rows.keys()]
    for (let i = 0; i < count('attachments'); i++) {
      const created_at = time.created()
      const [contentType, extension] = random.pick(CONTENT_TYPES)
      const onNote = notes.length > 0 && (people.length === 0 || random.chance(0.7))
      const targets = onNote ? notes : people
      const id = ids.next('attachment')
      insert(store.attachments, {
        id,
        uuid: uuidOf(id),
        user_id: users.length ? random.pick(users) : null,
        attachable_id: targets.length ? random.pick(targets) : null,
        attachable_type: targets.length ? (onNote ? 'Protocol' : 'Person') : null,
        content_type: contentType,
        filename: `${random.pick(FILE_NAMES)} ${i + 1}.${extension}`,
        attachment_category_id: random.chance(0.5) ? random.pick(CATEGORIES) : null,
        size: random.int(options.attachmentBytes?.min ?? 1024, options.attachmentBytes?.max ?? 4096),
        created_at,
        // Files are seldom changed: most were last written when they were attached.
        updated_at: random.chance(0.8) ? created_at : time.updated(created_at),
      })
    }
  },
}
