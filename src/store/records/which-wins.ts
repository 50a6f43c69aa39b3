// Which write wins: the one rule for every writer of the mirror, in two parts that read the same
// facts. docs/how-sync-works.md, "How rows are written", states it as a table.
//
// 1. Whether a webhook payload is applied at all, and whether its record must be fetched as well
//    (`judgePayloads`, pure): a payload is one claim about the record among others that may arrive in
//    any order, and timestamps have whole seconds.
// 2. Whether an incoming record replaces the row the mirror holds (`replacesRow`, the condition of the
//    upsert's `on conflict … do update`), from `updated_at`, where the row came from (`_source`), when
//    its request was sent (`_fetched_at`), when it was written (`_synced_at`) and its tombstone
//    (`_deleted_at`). In order, the first case that matches decides:
//
//    | the row | the incoming record | wins |
//    |---|---|---|
//    | tombstoned | fetched by a request sent after the deletion was recorded | incoming |
//    | tombstoned | marked deleted itself (the upstream's `deleted_at`) | as for a live row, below |
//    | tombstoned | anything else | the row |
//    | live | a newer `updated_at` | incoming |
//    | live, from a payload | fetched by a request sent over a minute after the row was written | incoming |
//    | live | an older `updated_at` | the row |
//    | live, from a fetch | a payload of the same second | the row |
//    | live, from a fetch | fetched by a request sent before the row's own, same second | the row |
//    | live | anything else of the same second | incoming |
//
//    Users have no `updated_at`: only the same-second rows apply to them.
// 3. A deletion (a `destroy` delivery, a 404) tombstones a live row whatever its dates
//    (tombstone.ts): the upstream does not bring ids back.
import { type RawBuilder, sql } from 'kysely'
import { hasUpdatedAt, type Resource } from '../../resources/index.ts'

/** The condition under which the incoming row (`excluded`) replaces the mirror's (`t`); see part 2. */
export function replacesRow(resource: Resource, fetchedAt: string | null): RawBuilder<unknown> {
  const sameSecondAccepts = sql`not (excluded._source = 'payload' and t._source = 'fetch')
    and not coalesce(excluded._source = 'fetch' and t._source = 'fetch' and excluded._fetched_at < t._fetched_at, false)`
  // A payload dated in the future (forged, a clock error) cannot pin its row: a later fetch read the
  // upstream's state after it, whatever the dates say (a minute: room for an API that shows a change
  // a little after its webhook).
  const laterFetch = sql`(excluded._source = 'fetch' and t._source = 'payload'
    and excluded._fetched_at > t._synced_at + interval '1 minute')`
  const liveRowAccepts = hasUpdatedAt(resource)
    ? sql`(t.updated_at is null or excluded.updated_at > t.updated_at
          or (excluded.updated_at = t.updated_at and ${sameSecondAccepts}) or ${laterFetch})`
    : sameSecondAccepts
  return sql`(t._deleted_at is null and ${liveRowAccepts})
    or (t._deleted_at is not null and ${fetchedAt}::timestamptz > t._deleted_at)
    or (t._deleted_at is not null and excluded._deleted_at is not null and ${liveRowAccepts})`
}

// How far a payload's `updated_at` may lie ahead of this process's clock (clock skew) and still be
// applied as it is.
const FUTURE_ALLOWANCE_MS = 60_000

export interface PayloadVerdict {
  /** The payload applied (its index), or null: none is trusted. */
  apply: number | null
  /** The payload whose delivery asks for a fetch of the record, or null: the payload settles it. */
  fetch: number | null
}

/**
 * Part 1: of the payloads of one record in a batch (their `updated_at` in order of arrival), the one
 * written, and whether the record must be fetched too. `held`: the `updated_at` of the mirror's row,
 * locked (undefined: no row).
 * - One has no usable `updated_at`: none is applied; fetched.
 * - The newest is dated over a minute beyond this clock: not applied; fetched.
 * - Otherwise the last of the newest second is applied, and fetched too when the row already holds
 *   that second or two payloads share it: which state is last cannot be told from whole seconds.
 */
export function judgePayloads(
  updatedAts: readonly unknown[],
  held: Date | null | undefined,
  now: number,
): PayloadVerdict {
  const seconds = updatedAts.map((value) => Date.parse(String(value)))
  const newest = Math.max(...seconds)
  if (seconds.length === 0 || Number.isNaN(newest)) return { apply: null, fetch: seconds.length ? 0 : null }
  const last = seconds.lastIndexOf(newest)
  if (newest > now + FUTURE_ALLOWANCE_MS) return { apply: null, fetch: last }
  const tied = seconds.filter((second) => second === newest).length > 1
  return { apply: last, fetch: held?.getTime() === newest || tied ? last : null }
}
