// The data dictionary of the mirror, derived from the resource table: every mirror table (main tables,
// child tables, member tables) with what it holds and every column with its type and meaning, and the
// live views over them (schemas crm_live and reservations_live). The comments in the database
// (src/store/dictionary.ts), the live views and `crm-sync schema --dbt` (./dbt.ts) all read this list.
// The texts are in ./crm.ts, ./crm-children.ts and ./reservation.ts, keyed by table; the compiler holds
// them to one text per table and column of the resource table.
import type { SqlType } from '../columns.ts'
import { type AnyChildTable, type AnyResource, childTables, resources } from '../index.ts'
import type { Columns } from '../types.ts'
import { crmTableTexts } from './crm.ts'
import { crmChildTexts, memberTexts } from './crm-children.ts'
import { reservationChildTexts, reservationTableTexts } from './reservation.ts'
import {
  CHILD_ENGINE_COLUMNS,
  type EngineColumn,
  MAIN_ENGINE_COLUMNS,
  RESERVED_WORD_ALIASES,
  type TableText,
} from './types.ts'

export { RESERVED_WORD_ALIASES } from './types.ts'

const texts: Readonly<Record<string, TableText<Columns>>> = {
  ...crmTableTexts,
  ...crmChildTexts,
  ...reservationTableTexts,
  ...reservationChildTexts,
} satisfies { [R in AnyResource as R['name']]: TableText<R['columns']> } & {
  [C in AnyChildTable as C['table']]: TableText<C['columns']>
}

export type MirrorSchema = 'crm' | 'reservations'

export interface DictionaryColumn {
  name: string
  type: SqlType
  description: string
  /** The upstream's key, when it differs from the column's name (`uuid` for `crm.attachments.id`). */
  source?: string
  /** In a live view: the column this one repeats under a safe name (`user` for `responsible_user`). */
  aliasOf?: string
}

/** A main table that owns a table's rows: its id is in `column` (and its name in `_parent_resource`). */
export interface ParentLink {
  resource: string
  column: string
  /** Whether `_parent_resource` names the parent (child tables; not member tables). */
  byResource: boolean
}

export interface DictionaryTable {
  /** Qualified, `crm.people`. */
  name: string
  schema: MirrorSchema
  /** Unqualified, `people`: the name of its live view too. */
  table: string
  kind: 'main' | 'child' | 'members'
  description: string
  /** The upstream's fields in the order of the resource table, then the engine columns. */
  columns: DictionaryColumn[]
  /** Child and member tables: the main tables that own their rows. */
  parents: ParentLink[]
}

function split(qualified: string): { schema: MirrorSchema; table: string } {
  const [schema, table] = qualified.split('.') as [MirrorSchema, string]
  return { schema, table }
}

function textOf(name: string): TableText<Columns> {
  const text = texts[name]
  if (!text) throw new Error(`the data dictionary has no text for ${name}`)
  return text
}

function fieldColumns(name: string, columns: Columns): DictionaryColumn[] {
  const text = textOf(name)
  return Object.entries(columns).map(([column, definition]) => ({
    name: column,
    type: definition.type,
    description: text.columns[column] ?? '',
    ...(definition.from === undefined ? {} : { source: definition.from }),
  }))
}

const engine = (columns: readonly EngineColumn[]): DictionaryColumn[] =>
  columns.map((column) => ({ ...column }))

function mainTable(resource: AnyResource): DictionaryTable {
  return {
    name: resource.name,
    ...split(resource.name),
    kind: 'main',
    description: textOf(resource.name).table,
    columns: [...fieldColumns(resource.name, resource.columns), ...engine(MAIN_ENGINE_COLUMNS)],
    parents: [],
  }
}

function childTable(child: AnyChildTable): DictionaryTable {
  const parents = resources
    .filter((resource) => resource.children.some((mapping) => mapping.child.table === child.table))
    .map((resource) => ({ resource: resource.name, column: '_parent_id', byResource: true }))
  return {
    name: child.table,
    ...split(child.table),
    kind: 'child',
    description: textOf(child.table).table,
    columns: [...fieldColumns(child.table, child.columns), ...engine(CHILD_ENGINE_COLUMNS)],
    parents,
  }
}

function memberTables(): DictionaryTable[] {
  return resources.flatMap((resource) => {
    const members = 'members' in resource ? resource.members : undefined
    if (!members) return []
    const columns: DictionaryColumn[] = [
      { name: members.groupColumn, type: 'bigint', description: memberTexts.group },
      { name: 'member_resource', type: 'text', description: memberTexts.member_resource },
      { name: 'member_id', type: 'bigint', description: memberTexts.member_id },
      { name: '_synced_at', type: 'timestamptz', description: memberTexts._synced_at },
    ]
    return [
      {
        name: members.table,
        ...split(members.table),
        kind: 'members' as const,
        description: memberTexts.table,
        columns,
        parents: [{ resource: resource.name, column: members.groupColumn, byResource: false }],
      },
    ]
  })
}

/** Every mirror table: the main tables in the order of the resource table, then child and member tables. */
export const mirrorTables: readonly DictionaryTable[] = [
  ...resources.map(mainTable),
  ...childTables.map(childTable),
  ...memberTables(),
]

// ---- live views -------------------------------------------------------------------------------

/** The schema of the live views of a mirror schema: `crm_live`, `reservations_live`. */
export const liveSchema = (schema: MirrorSchema): string => `${schema}_live`

/** The mirror's schemas, each with its schema of live views. */
export const MIRROR_SCHEMAS: readonly MirrorSchema[] = ['crm', 'reservations']

export const SCHEMA_DESCRIPTIONS: Readonly<Record<MirrorSchema, string>> = {
  crm:
    'Mirror of the CRM account, kept by crm-sync: one table per resource and per kind of sub-object; ' +
    'deleted records stay, with _deleted_at set.',
  reservations:
    'Mirror of the reservation account, kept by crm-sync: one table per resource, and the tags of ' +
    'contacts; deleted records stay, with _deleted_at set.',
}

export const liveSchemaDescription = (schema: MirrorSchema): string =>
  `Live rows of schema ${schema}, kept by crm-sync: one view per table of ${schema}, of its rows with ` +
  '_deleted_at null (child tables: the rows of live parents).'

export interface LiveView {
  /** `crm_live` */
  schema: string
  /** The table's name. */
  name: string
  /** The table it shows the live rows of. */
  of: DictionaryTable
  description: string
  /** The table's columns but `_deleted_at` (null in every row shown); a reserved word, then its alias. */
  columns: DictionaryColumn[]
}

function liveDescription(table: DictionaryTable): string {
  if (table.kind === 'main') return `Live rows of ${table.name} (_deleted_at is null). ${table.description}`
  const parents = table.parents.map((parent) => parent.resource).join(', ')
  return `Rows of ${table.name} whose parent record is live (${parents}). ${table.description}`
}

function viewColumns(table: DictionaryTable): DictionaryColumn[] {
  return table.columns
    .filter((column) => column.name !== '_deleted_at')
    .flatMap((column) => {
      const alias = RESERVED_WORD_ALIASES[column.name]
      if (!alias) return [column]
      const description = `Same as "${column.name}" (an SQL reserved word), under a name needing no quotes.`
      return [column, { name: alias, type: column.type, description, aliasOf: column.name }]
    })
}

/** One view per mirror table, of its live rows (child and member tables: the rows of live parents). */
export const liveViews: readonly LiveView[] = mirrorTables.map((table) => ({
  schema: liveSchema(table.schema),
  name: table.table,
  of: table,
  description: liveDescription(table),
  columns: viewColumns(table),
}))
