// What the data dictionary (src/resources/dictionary) asks of the database, as SQL: the live views and
// every comment on the mirror's schemas, tables, views and columns. Pure: ./dictionary.ts compares it
// with the catalog and applies what differs.
import { createHash } from 'node:crypto'
import {
  type DictionaryTable,
  type LiveView,
  liveSchema,
  liveSchemaDescription,
  liveViews,
  MIRROR_SCHEMAS,
  type MirrorSchema,
  mirrorTables,
  SCHEMA_DESCRIPTIONS,
} from '../resources/dictionary/index.ts'

export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`
const qualified = (schema: string, name: string): string => `${ident(schema)}.${ident(name)}`

/** A string literal, whatever standard_conforming_strings says. */
export function literal(text: string): string {
  const quoted = text.replaceAll("'", "''")
  return text.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`
}

export interface ViewDefinition {
  schema: string
  name: string
  /** Column names in order, as the catalog will list them. */
  columns: string[]
  /** `create or replace view ...` */
  create: string
}

function selectList(view: LiveView, prefix: string): string {
  return view.columns
    .map((column) =>
      column.aliasOf
        ? `${prefix}${ident(column.aliasOf)} as ${ident(column.name)}`
        : `${prefix}${ident(column.name)}`,
    )
    .join(', ')
}

function viewQuery(view: LiveView): string {
  const table = view.of
  const from = qualified(table.schema, table.table)
  if (table.kind === 'main') return `select ${selectList(view, '')} from ${from} where "_deleted_at" is null`
  // Rows of live parents: one branch per parent table, each a join on the parent's primary key.
  return table.parents
    .map((parent) => {
      const [schema, name] = parent.resource.split('.') as [string, string]
      const own = parent.byResource ? `c."_parent_resource" = ${literal(parent.resource)} and ` : ''
      return (
        `select ${selectList(view, 'c.')} from ${from} c join ${qualified(schema, name)} p ` +
        `on p."id" = c.${ident(parent.column)} where ${own}p."_deleted_at" is null`
      )
    })
    .join(' union all ')
}

export const viewDefinitions: readonly ViewDefinition[] = liveViews.map((view) => ({
  schema: view.schema,
  name: view.name,
  columns: view.columns.map((column) => column.name),
  create: `create or replace view ${qualified(view.schema, view.name)} as ${viewQuery(view)}`,
}))

/** A short hash of the definitions of a live schema's views: its comment carries it (see ./dictionary.ts). */
export function definitionsHash(schema: string): string {
  const hash = createHash('sha256')
  for (const view of viewDefinitions) if (view.schema === schema) hash.update(`${view.create};\n`)
  return hash.digest('hex').slice(0, 12)
}

/** What a comment is on: `schema crm`, `table crm.people`, `view crm_live.people`, `column crm.people.id`. */
export interface CommentTarget {
  kind: 'schema' | 'table' | 'view' | 'column'
  schema: string
  relation?: string
  column?: string
}

export const targetKey = (target: CommentTarget): string =>
  [target.kind, target.schema, target.relation ?? '', target.column ?? ''].join('.')

export interface WantedComment {
  target: CommentTarget
  text: string
}

export function commentStatement({ target, text }: WantedComment): string {
  const relation = qualified(target.schema, target.relation ?? '')
  const object =
    target.kind === 'schema'
      ? `schema ${ident(target.schema)}`
      : target.kind === 'column'
        ? `column ${relation}.${ident(target.column ?? '')}`
        : `${target.kind} ${relation}`
  return `comment on ${object} is ${literal(text)}`
}

/** A live schema's comment, with the hash of its views' definitions (they are replaced when it differs). */
export const liveSchemaText = (schema: MirrorSchema): string =>
  `${liveSchemaDescription(schema)} Definitions ${definitionsHash(liveSchema(schema))}.`

function relationComments(
  kind: 'table' | 'view',
  schema: string,
  relation: string,
  description: string,
  columns: { name: string; description: string }[],
): WantedComment[] {
  return [
    { target: { kind, schema, relation }, text: description },
    ...columns.map((column) => ({
      target: { kind: 'column' as const, schema, relation, column: column.name },
      text: column.description,
    })),
  ]
}

const tableComments = (table: DictionaryTable) =>
  relationComments('table', table.schema, table.table, table.description, table.columns)

/** Every comment the dictionary asks for but those of the live schemas (which follow their views). */
export const wantedComments: readonly WantedComment[] = [
  ...MIRROR_SCHEMAS.map((schema) => ({
    target: { kind: 'schema' as const, schema },
    text: SCHEMA_DESCRIPTIONS[schema],
  })),
  ...mirrorTables.flatMap(tableComments),
  ...liveViews.flatMap((view) =>
    relationComments('view', view.schema, view.name, view.description, view.columns),
  ),
]

/** The live schemas and the mirror schema each shows. */
export const liveSchemas: readonly { schema: string; of: MirrorSchema }[] = MIRROR_SCHEMAS.map((of) => ({
  schema: liveSchema(of),
  of,
}))
