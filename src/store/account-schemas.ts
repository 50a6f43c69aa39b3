// An account's schemas (docs/accounts.md). The code names the schemas of the one account of a
// deployment without ACCOUNTS_FILE: crm, reservations, history and sync, and the live views' crm_live
// and reservations_live. An account of ACCOUNTS_FILE keeps the same objects under its own names
// (crm_north, reservations_north, history_north, sync_north, crm_north_live, reservations_north_live).
// A Kysely plugin renames them in every statement a connection of the account runs: in the query
// builder's table references, and in the text of `sql` templates (the frozen migrations, the
// history's functions, the dictionary's comments and views). Record keys (`crm.people` as a resource
// name) are values, not relations, and stay as they are.
import {
  IdentifierNode,
  type Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RawBuilder,
  type RawNode,
  type RootOperationNode,
  type SchemableIdentifierNode,
  sql,
  type UnknownRow,
  ValueNode,
} from 'kysely'

/** The schemas of one account, by the name the code gives them. */
export interface AccountSchemas {
  crm: string
  reservations: string
  history: string
  sync: string
  crm_live: string
  reservations_live: string
}

export type LogicalSchema = keyof AccountSchemas

/** The schemas of the one account of a deployment without ACCOUNTS_FILE: the code's own names. */
export const DEFAULT_SCHEMAS: AccountSchemas = {
  crm: 'crm',
  reservations: 'reservations',
  history: 'history',
  sync: 'sync',
  crm_live: 'crm_live',
  reservations_live: 'reservations_live',
}

/** `north`: crm_north, reservations_north, history_north, sync_north and their live views' schemas. */
export function accountSchemas(account: string | null): AccountSchemas {
  if (account === null) return DEFAULT_SCHEMAS
  return {
    crm: `crm_${account}`,
    reservations: `reservations_${account}`,
    history: `history_${account}`,
    sync: `sync_${account}`,
    crm_live: `crm_${account}_live`,
    reservations_live: `reservations_${account}_live`,
  }
}

const asPattern = (name: string) => name.replace(/[^a-z0-9_]/g, '')

// In the text of a statement, a schema-qualified name (`crm.people`, `"crm"."people"`; not
// `x.crm.people`, `crm_live2.x` or the string `'crm.people'`) or a schema named on its own
// (`create schema if not exists sync`, `comment on schema "history"`).
function namedIn(names: readonly string[]): RegExp {
  const any = names.map(asPattern).join('|')
  return new RegExp(
    `(?<![\\w$."'])("?)(${any})\\1(?=\\.)|(\\bschema\\s+(?:if\\s+(?:not\\s+)?exists\\s+)?)("?)(${any})\\4(?![\\w$])`,
    'gi',
  )
}

/** Renames schemas, from one account's names to another's. */
class SchemaRenamer extends OperationNodeTransformer {
  readonly #names: ReadonlyMap<string, string>
  readonly #pattern: RegExp

  constructor(from: AccountSchemas, to: AccountSchemas) {
    super()
    const pairs = (Object.keys(from) as LogicalSchema[]).map((key) => [from[key], to[key]] as const)
    this.#names = new Map(pairs.filter(([a, b]) => a !== b))
    this.#pattern = namedIn([...this.#names.keys()])
  }

  /** `crm.people` → `crm_north.people` in the text of a statement (see namedIn). */
  rename(text: string): string {
    if (this.#names.size === 0) return text
    return text.replace(this.#pattern, (match, ...groups: (string | undefined)[]) => {
      const [quote, qualified, keyword, schemaQuote, schema] = groups
      const name = this.#names.get(qualified ?? schema ?? '')
      if (name === undefined) return match
      return qualified ? `${quote}${name}${quote}` : `${keyword}${schemaQuote}${name}${schemaQuote}`
    })
  }

  schema(name: string): string {
    return this.#names.get(name) ?? name
  }

  protected override transformSchemableIdentifier(node: SchemableIdentifierNode): SchemableIdentifierNode {
    const name = node.schema && this.#names.get(node.schema.name)
    return name ? { ...node, schema: IdentifierNode.create(name) } : node
  }

  protected override transformRaw(node: RawNode): RawNode {
    const transformed = super.transformRaw(node)
    const { sqlFragments: fragments, parameters } = transformed
    return {
      ...transformed,
      sqlFragments: fragments.map((text) => this.rename(text)),
      // A value that is a relation's name: `${'crm.tags'}::regclass`, `to_regclass(${'crm.tags'})`.
      parameters: parameters.map((parameter, i) =>
        ValueNode.is(parameter) &&
        typeof parameter.value === 'string' &&
        (/^\s*::\s*regclass\b/.test(fragments[i + 1] ?? '') || /\bto_regclass\(\s*$/.test(fragments[i] ?? ''))
          ? ValueNode.create(this.rename(parameter.value))
          : parameter,
      ),
    }
  }
}

/** Renames the code's schemas to an account's in every statement of the connections it is given to. */
export class AccountSchemasPlugin implements KyselyPlugin {
  readonly schemas: AccountSchemas
  readonly #renamer: SchemaRenamer

  constructor(schemas: AccountSchemas) {
    this.schemas = schemas
    this.#renamer = new SchemaRenamer(DEFAULT_SCHEMAS, schemas)
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#renamer.transformNode(args.node, args.queryId)
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}

/** `crm.people` in `schemas`: `crm_north.people`. */
export function qualifiedIn(schemas: AccountSchemas, name: string): string {
  const [schema = '', ...rest] = name.split('.')
  return Object.hasOwn(schemas, schema) ? [schemas[schema as LogicalSchema], ...rest].join('.') : name
}

/**
 * The connections of `db` for an account: the same pool, every statement in the account's schemas.
 * `db` may be another account's (it carries no plugin but an account's): the account is replaced.
 */
export function forAccount<DB>(db: Kysely<DB>, schemas: AccountSchemas): Kysely<DB> {
  const current = schemasOf(db)
  if (current === schemas) return db
  const base = current === DEFAULT_SCHEMAS ? db : db.withoutPlugins()
  return schemas === DEFAULT_SCHEMAS ? base : base.withPlugin(new AccountSchemasPlugin(schemas))
}

/**
 * What the catalog of `db`'s account is read with: the code's names of schemas, relations and texts as
 * the account has them (`physical`), and the account's as the code has them (`logical`): a function's
 * body or a comment written through `db` holds the account's names, and reads back as the code wrote it.
 */
export interface CatalogNames {
  schemas: AccountSchemas
  /** `sync` → `sync_north`; `sync.inbox` → `sync_north.inbox`. */
  physical(name: string): string
  /** `sync_north` → `sync`; `sync_north.inbox` → `sync.inbox`. */
  logical(name: string): string
  /** A text written through `db` (a comment, a function's body) as the code wrote it. */
  logicalText(text: string): string
}

const namesCache = new WeakMap<AccountSchemas, CatalogNames>()

export function catalogNames<DB>(db: Kysely<DB>): CatalogNames {
  const schemas = schemasOf(db)
  const known = namesCache.get(schemas)
  if (known) return known
  const back = new SchemaRenamer(schemas, DEFAULT_SCHEMAS)
  const names: CatalogNames = {
    schemas,
    physical: (name) => qualifiedIn(schemas, name),
    logical: (name) => {
      const [schema = '', ...rest] = name.split('.')
      return [back.schema(schema), ...rest].join('.')
    },
    logicalText: (text) => back.rename(text),
  }
  namesCache.set(schemas, names)
  return names
}

/** The schemas the statements of `db` (or of a transaction of it) run in. */
export function schemasOf<DB>(db: Kysely<DB>): AccountSchemas {
  const plugin = db.getExecutor().plugins.find((p) => p instanceof AccountSchemasPlugin)
  return plugin?.schemas ?? DEFAULT_SCHEMAS
}

/**
 * The key of an advisory lock of `db`'s account: `key` itself for the one account without
 * ACCOUNTS_FILE (as before there were several), mixed with the account's engine schema otherwise, so
 * that one account's lock never holds another's work back.
 */
export function accountLockKey<DB>(db: Kysely<DB>, key: number): RawBuilder<unknown> {
  const state = schemasOf(db).sync
  return state === DEFAULT_SCHEMAS.sync
    ? sql`${key}::bigint`
    : sql`(${key}::bigint # hashtext(${state})::bigint)`
}

/** `sync.inbox` as `db`'s account names it (`sync_north.inbox`): for the catalog's functions. */
export function relationOf<DB>(db: Kysely<DB>, qualified: string): string {
  return qualifiedIn(schemasOf(db), qualified)
}
