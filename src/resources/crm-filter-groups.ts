// crm.filter_groups: the CRM's saved filters, and the members each one stands for.
import { bigint, integer, text, timestamptz } from './columns.ts'
import { resource } from './types.ts'

export const filterGroups = resource({
  name: 'crm.filter_groups',
  service: 'crm',
  // Saved filters; `GET /api/filter_groups/{id}` answers a group's members (paged, each in the index
  // form of its model type), not the group: read after the walk into crm.filter_group_members.
  path: 'filter_groups',
  wrapper: 'filter_group',
  includes: [],
  webhookModel: null,
  columns: {
    id: bigint,
    account_id: bigint,
    model_type: text,
    name: text,
    element_count: integer,
    created_at: timestamptz,
    updated_at: timestamptz,
  },
  children: [],
  members: {
    table: 'crm.filter_group_members',
    groupColumn: 'filter_group_id',
    typeColumn: 'model_type',
    countColumn: 'element_count',
  },
  softDeleteKey: null,
  // Only the index: a group missing from a complete walk is deleted (and its members with it).
  routes: { show: false, count: false },
  dependants: [],
})
