// The CRM's activity log (GET /api/activities): an entry for every create, update and destroy of people,
// companies, deals, projects, tasks and notes, written by the upstream itself. Read only, append-only, no
// webhooks, no count route shown. `change` is open in shape (`{person: {changes: {name: [old, new]}}}`,
// `change.changes`, `change.task`, ...): it is kept whole as jsonb.
import { bigint, boolean, jsonb, text, timestamptz } from './columns.ts'
import { resource } from './types.ts'

export const activities = resource({
  name: 'crm.activities',
  service: 'crm',
  path: 'activities',
  wrapper: 'activity',
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    user_id: bigint,
    attachable_id: bigint,
    attachable_type: text,
    verb: text,
    confidential: boolean,
    change: jsonb,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  children: [],
  softDeleteKey: null,
  // An activity missing from a walk is not a deletion: nothing of this table is ever tombstoned.
  appendOnly: true,
  // Every public client pages the log with perpage=250 (docs/upstream.md).
  perPage: 250,
  // The spec routes GET /activities/{id}; the count action exists, its path is not shown.
  routes: { show: true, count: false },
  dependants: [],
})
