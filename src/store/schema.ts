// Kysely table types of the whole database, derived from the resource table where it can be.
import type { ColumnType, Generated } from 'kysely'
import type { AnyChildTable, AnyResource, Columns, RowOf } from '../resources/index.ts'
import type { SweepStateColumn } from './runs/states.ts'

export type RecordSource = 'fetch' | 'payload'

/** Engine columns of every main table; they all begin with an underscore. */
export interface MainEngineColumns {
  _raw: unknown | null
  _synced_at: Date
  _deleted_at: Date | null
  /** Where the row's data came from: a response of the upstream, or a webhook payload. Null for a tombstone placeholder. */
  _source: RecordSource | null
  /** When the request was sent whose answer last wrote the row (PostgreSQL's clock); null for a payload's row. */
  _fetched_at: Date | null
  /** How many times the engine wrote the row after inserting it: tells a row's versions apart. */
  _version: number
}

export interface ChildEngineColumns {
  _parent_resource: string
  _parent_id: number
  _ordinal: number
  _raw: unknown
  _synced_at: Date
}

/** A main table's row; its `id` is a number, or a string where the `id` column is text (attachments). */
type Main<R extends { columns: Columns }> = Omit<RowOf<R['columns']>, 'id'> & {
  id: R['columns']['id'] extends { type: 'text' } ? string : number
} & MainEngineColumns
type Child<C extends { columns: Columns }> = RowOf<C['columns']> & ChildEngineColumns

type Timestamp = ColumnType<Date, Date | string, Date | string>

export interface ResourceStateTable {
  resource: string
  watermark: Timestamp | null
  last_incremental_sync_at: Timestamp | null
  last_full_sync_at: Timestamp | null
  /** When the last complete walk and its reconciliation ended (verification is scheduled from it). */
  last_verified_at: Timestamp | null
  last_remote_count: number | null
  last_remote_count_at: Timestamp | null
  /** The most records one index page of the resource has held (the upstream's cap is at least this). */
  largest_page: number | null
  updated_at: Generated<Date>
}

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed'
export type RunMode = 'incremental' | 'full'

export interface RunsTable {
  id: Generated<number>
  mode: RunMode
  status: RunStatus
  requested_by: string
  created_at: Generated<Date>
  started_at: Timestamp | null
  finished_at: Timestamp | null
  error: string | null
}

export interface RunResourcesTable {
  run_id: number
  resource: string
  status: RunStatus
  records: Generated<number>
  pages: Generated<number>
  remote_count: number | null
  api_requests: Generated<number>
  checkpoint: unknown | null
  started_at: Timestamp | null
  finished_at: Timestamp | null
  error: string | null
  /** The attempt that owns the sweep; a retried job takes it over, and the old attempt stops writing. */
  lease: string | null
  /** The sweep's last sign of life: its creation, start, and every page or reconciled batch. */
  progress_at: Generated<Date>
  /** When the sweep's job was sent; null while the sweep waits for another sweep of its resource to end. */
  job_sent_at: Timestamp | null
  /** Its state, named (runs/states.ts): derived from `status`, `job_sent_at` and `started_at`. */
  state: SweepStateColumn
  /** The full run this incremental sweep makes way for, set where that run was created. */
  make_way_for: number | null
  /** Rows checked with `show` because the sweep did not see them. */
  reconciled: Generated<number>
  tombstoned: Generated<number>
}

export type InboxStatus = 'accepted' | 'rejected' | 'processed' | 'failed'

export interface InboxTable {
  id: Generated<number>
  received_at: Generated<Date>
  model: string | null
  event: string | null
  shape: string | null
  record_id: number | null
  payload: unknown | null
  /** The body as received, kept for rejected deliveries that are not JSON. */
  body: string | null
  /** The request's headers, secrets masked (receiver/headers.ts); null for deliveries kept before 0023. */
  headers: unknown | null
  status: InboxStatus
  reason: string | null
  processed_at: Timestamp | null
  /** Times a worker took the delivery and could not apply it. */
  attempts: Generated<number>
  /** Not taken again before then (backoff after a failed attempt); null: at once. */
  available_at: Timestamp | null
  /** The last attempt's error, and the reason a `failed` delivery was given up. */
  error: string | null
}

export interface UpstreamBudgetTable {
  /** 'crm' or 'reservation': never the API key. */
  upstream: string
  /** Set from a 429's Retry-After: no replica sends to this upstream before then. */
  paused_until: Timestamp | null
}

export interface UpstreamBudgetSlotsTable {
  upstream: string
  slot: number
  /** When the slot may carry the next request. */
  free_at: Timestamp
  /** Bumped on every take, so that a late release cannot free a slot somebody else took since. */
  lease: Generated<number>
}

/** Per poll of the activity feed (src/sync/feed): its cursor, coverage and the lease of the replica that polls. */
export interface ActivityFeedTable {
  feed: string
  newest_id: ColumnType<string | null, number | null, number | null>
  newest_created_at: Timestamp | null
  polled_at: Timestamp | null
  /** Every change the log names since then has been read (null: never polled, or a gap). */
  covered_since: Timestamp | null
  /** Every entry of the log read since then is in crm.activities (null: not written, or a gap). */
  log_written_since: Timestamp | null
  lease_owner: string | null
  lease_until: Timestamp | null
  updated_at: Generated<Date>
}

/** A group's members (crm.filter_group_members, see `MemberTable` in src/resources/types.ts). */
export interface FilterGroupMembersTable {
  filter_group_id: number
  member_resource: string
  member_id: number
  _synced_at: Generated<Date>
}

/** Per group, its last complete read of members, and the group's count and updated_at then. */
export interface MemberReadsTable {
  resource: string
  group_id: number
  element_count: number | null
  updated_at: Timestamp | null
  members: number
  read_at: Generated<Date>
}

/** A replay of every rejected or failed delivery since a time (src/sync/delivery/replay-all.ts). */
export interface DeliveryReplaysTable {
  id: Generated<number>
  /** Deliveries received at or after this time, and at or before `requested_at`. */
  since: Timestamp
  statuses: ('rejected' | 'failed')[]
  requested_at: Generated<Date>
  state: Generated<'running' | 'cancelled' | 'finished'>
  /** The deliveries the replay covered when it was asked. */
  total: number
  /** The deliveries it has handled (replayed, or read again and still rejected). */
  done: Generated<number>
  /** The last inbox id handled: the next batch begins after it. */
  cursor: Generated<number>
  finished_at: Timestamp | null
}

/** Work one process of the deployment does at a time (store/leases.ts). */
export interface LeasesTable {
  name: string
  holder: string
  held_until: Timestamp
}

/** Per record, when its details (read per record: a person's historic events) were last read. */
export interface RecordDetailsTable {
  resource: string
  record_id: number
  /** When the first request of the last read that succeeded was granted; null before one did. */
  read_at: Timestamp | null
  /** The record's `updated_at` when it was picked for that read. */
  read_for: Timestamp | null
  /** Reads that failed in a row since. */
  failures: Generated<number>
  /** Not read again before then (a read failed). */
  retry_at: Timestamp | null
}

/** A main table per resource of the table, keyed by its qualified name: the Kysely `Database`. */
type MirrorTables = { [R in AnyResource as R['name']]: Main<R> }
/** A table per child table of the table (`crm.tags`): the Kysely `Database`. */
type ChildTables = { [C in AnyChildTable as C['table']]: Child<C> }

export interface Database extends MirrorTables, ChildTables {
  'sync.resource_state': ResourceStateTable
  'sync.runs': RunsTable
  'sync.run_resources': RunResourcesTable
  'sync.inbox': InboxTable
  'sync.activity_feed': ActivityFeedTable
  'sync.upstream_budget': UpstreamBudgetTable
  'sync.upstream_budget_slots': UpstreamBudgetSlotsTable
  'crm.filter_group_members': FilterGroupMembersTable
  'sync.member_reads': MemberReadsTable
  'sync.delivery_replays': DeliveryReplaysTable
  'sync.record_details': RecordDetailsTable
  'sync.leases': LeasesTable
}
