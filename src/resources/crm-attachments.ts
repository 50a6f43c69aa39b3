// crm.attachments: the metadata of the files attached to notes and records (GET /api/attachments).
import { bigint, text, timestamptz } from './columns.ts'
import { resource } from './types.ts'

export const attachments = resource({
  name: 'crm.attachments',
  service: 'crm',
  path: 'attachments',
  wrapper: 'attachment',
  includes: [],
  webhookModel: null,
  columns: {
    // Keyed by the upstream's `uuid`, a text id (src/resources/ids.ts); a numeric `id`, when the
    // upstream sends one, stays in `_raw`.
    id: { type: 'text', from: 'uuid' },
    account_id: bigint,
    user_id: bigint,
    attachable_id: bigint,
    attachable_type: text,
    content_type: text,
    filename: text,
    attachment_category_id: bigint,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  // Listings carry the file itself, Base64, in `data`: dropped as each page is parsed, never stored.
  discard: ['data'],
  children: [],
  softDeleteKey: null,
  // Only the index is known (no show, no count, no webhooks): an attachment missing from a complete walk
  // is deleted.
  routes: { show: false, count: false },
  dependants: [],
})
