// The data dictionary's building blocks: the text a table and each of its columns get (checked by the
// compiler against the resource table: one text per column, none for a column that does not exist), the
// engine columns described once for every table that has them, and the safe names the live views give
// columns named with SQL reserved words.
import type { SqlType } from '../columns.ts'
import type { Columns } from '../types.ts'

/** What a table holds, and what each of its columns means (with its allowed values, where known). */
export interface TableText<C extends Columns> {
  table: string
  columns: { readonly [K in keyof C & string]: string }
}

export interface EngineColumn {
  name: string
  type: SqlType
  description: string
}

/** Engine columns of every main table, after the upstream's fields. */
export const MAIN_ENGINE_COLUMNS: readonly EngineColumn[] = [
  {
    name: '_raw',
    type: 'jsonb',
    description:
      'The record as the upstream returned it (unwrapped, with its includes) or as the webhook carried it; ' +
      'fields without a column of their own are here.',
  },
  { name: '_synced_at', type: 'timestamptz', description: 'When crm-sync last wrote the row.' },
  {
    name: '_deleted_at',
    type: 'timestamptz',
    description:
      'Null while the record is live; when it was found deleted upstream (or its own deletion mark). ' +
      'Live rows: where _deleted_at is null (or the views of schema crm_live / reservations_live).',
  },
  {
    name: '_source',
    type: 'text',
    description:
      'Where the row last came from: fetch (an answer of the upstream API) or payload (a webhook body); ' +
      'null for a placeholder of a deletion.',
  },
  {
    name: '_fetched_at',
    type: 'timestamptz',
    description:
      "When the request was sent whose answer last wrote the row (the database's clock); a webhook " +
      'payload keeps the previous value.',
  },
  {
    name: '_version',
    type: 'bigint',
    description: 'How many times crm-sync wrote the row after inserting it.',
  },
]

/** Engine columns of every child table (sub-objects a parent record includes), after the item's fields. */
export const CHILD_ENGINE_COLUMNS: readonly EngineColumn[] = [
  {
    name: '_parent_resource',
    type: 'text',
    description: "The parent record's main table, e.g. crm.people.",
  },
  { name: '_parent_id', type: 'bigint', description: "The parent record's id." },
  {
    name: '_ordinal',
    type: 'integer',
    description:
      "The item's place among the parent's items for this table (0, 1, ...); the primary key is " +
      '(_parent_resource, _parent_id, _ordinal), so an item the upstream lists twice is two rows.',
  },
  { name: '_raw', type: 'jsonb', description: 'The sub-object as received.' },
  {
    name: '_synced_at',
    type: 'timestamptz',
    description: 'When the row was first written with these values.',
  },
]

/**
 * Safe names, in the live views, of columns named with an SQL reserved word: the tables keep the
 * upstream's name (`select user from crm.people` answers the database role, `"user"` the column); the
 * views add the column again under this name beside it.
 */
export const RESERVED_WORD_ALIASES: Readonly<Record<string, string>> = {
  user: 'responsible_user',
  primary: 'is_primary',
}
