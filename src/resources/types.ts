// The shape of an entry of the resource table (src/resources/index.ts), and the helpers that keep each
// entry's names as literal types, so that the lists and types derived from the table know them.
import type { Column, SqlValue } from './columns.ts'

export type Columns = Record<string, Column>

export type RowOf<C extends Columns> = {
  [K in keyof C]: C[K] extends Column<infer T> ? SqlValue<T> | null : never
}

export interface ChildTable<Name extends string = string, C extends Columns = Columns> {
  table: Name
  columns: C
  /** A column that holds the parent's id (e.g. `deal_id`), filled from the parent rather than the item. */
  parentColumn?: string
}

export interface ChildMapping<T extends ChildTable = ChildTable> {
  child: T
  /** Key of the included array inside the upstream record. */
  key: string
  /** Values for columns the item does not carry (e.g. `type: 'Tel'` for items of `tels`). */
  defaults?: Record<string, unknown>
  /**
   * The items are bare ids (a note's `person_ids: [1, 2]`), not objects: each id goes into this column,
   * the other columns take their `defaults` (or null). Items that are neither number nor string are
   * skipped, as objects are.
   */
  idColumn?: string
  /**
   * Items of a shape the upstream does not show (a person's `connections`): every item is a row, whatever
   * it is. An object's keys fill the columns; anything else (a number, a string, null) leaves them null.
   * `_raw` holds the item as received either way. Without it, items that are neither objects nor arrays
   * are skipped.
   */
  anyShape?: boolean
  /**
   * The items are in no include: they are read per record from `GET <path>/{id}/<route>` (a person's
   * historic events), by the details pass (src/sync/details/), never from a page, show or payload.
   * `key` then names the items in docs and logs only.
   */
  route?: string
}

/**
 * Records of other resources that each record of a resource stands for (a filter group's members): the
 * pages of `GET /api/<path>/{id}`, mirrored as (group, member resource, member id) rows of `table`.
 */
export interface MemberTable {
  table: string
  /** The member table's column holding the group's id (its other two: `member_resource`, `member_id`). */
  groupColumn: string
  /** The group's column naming its members' model type (`Person`: they are records of crm.people). */
  typeColumn: string
  /** The group's column with its number of members, as the upstream counts them. */
  countColumn: string
}

/**
 * Records of another resource that the upstream deletes or changes, without a word and without touching
 * their `updated_at`, together with their parent (a person's tasks; the deals naming a person).
 */
export interface Dependant {
  /** The dependant resource (qualified name). */
  resource: string
  /** Its column holding the parent's id (a column of `through`, when given). */
  column: string
  /** Further columns that must hold these values (e.g. `attachable_type: 'Person'`). */
  where?: Readonly<Record<string, string>>
  /**
   * A child table of the dependant resource whose rows name the parent (a note's `crm.note_links`): a
   * dependant is then a record with such a row, and `column` and `where` are the child table's.
   */
  through?: string
}

export type Service = 'crm' | 'reservation'

export interface Resource<
  Name extends string = string,
  C extends Columns = Columns,
  Model extends string | null = string | null,
  Children extends readonly ChildMapping[] = readonly ChildMapping[],
> {
  name: Name
  service: Service
  /** Path below `${base}/api/`. */
  path: string
  /**
   * Key a record is wrapped under (CRM), null for bare records (reservation service), or `'*'`: wrapped
   * under a single key whatever its name (notes: the key of their concrete type, new types included).
   */
  wrapper: string | null
  /**
   * Includes requested with every index page and show, so that children arrive with the record: the
   * CRM's `includes=tags addrs`, the reservation service's `include_tags=true` (one parameter each).
   */
  includes: readonly string[]
  /**
   * Model name of CRM webhooks for this resource (`person`), or null when the upstream sends none.
   * Hooks are registered, and deliveries routed, for exactly the models the table names here.
   */
  webhookModel: Model
  /**
   * The mirror's columns. `id` is a number (bigint), or text read from another upstream key (attachments:
   * `id: { type: 'text', from: 'uuid' }`); see ./ids.ts.
   */
  columns: C
  /**
   * Upstream keys dropped from every record as its page or answer is parsed, before anything is written
   * or logged: never stored, in a column or in `_raw` (attachments: the file itself, Base64 `data`).
   */
  discard?: readonly string[]
  /**
   * Whether `updated_at` is the sync's clock: every record carries one, the index is ordered by it and
   * the newer record wins. The default where the columns have `updated_at`; false where the upstream
   * shows no such thing (reservation tags): the column is then data like any other, null when not
   * given, the index is read whole and the later fetch wins.
   */
  ordered?: boolean
  children: Children
  /**
   * A log the upstream only ever appends to (activities): a record missing from a walk is not deleted,
   * so reconciliation never runs and nothing is tombstoned; an incremental walk down to the watermark
   * is its whole verification.
   */
  appendOnly?: boolean
  /** `perpage` asked for this index when its clients are known to ask one (activities: 250). */
  perPage?: number
  /** Members each record stands for, read after a walk (src/sync/sweep/members.ts). */
  members?: MemberTable
  /** Upstream key whose non-null value means the record is deleted (the upstream's own soft delete). */
  softDeleteKey: string | null
  /** Routes the upstream offers beyond the index. */
  routes: { show: boolean; count: boolean }
  /**
   * Silent cascades: when a record of this resource is tombstoned, these dependants of it are checked
   * with `show` (written anew, or tombstoned on 404) at once, rather than at the next reconciliation.
   */
  dependants: readonly Dependant[]
}

export const child = <Name extends string, C extends Columns>(table: ChildTable<Name, C>) => table

export const resource = <
  Name extends string,
  C extends Columns,
  Model extends string | null = null,
  const Children extends readonly ChildMapping[] = [],
>(
  definition: Resource<Name, C, Model, Children>,
) => definition
