// Writes of upstream records into the mirror. At most two statements per batch, whatever its size:
// the parent rows, then the replacement of the children of the parents written whose includes changed.
//
// Ordering rules (DESIGN.md, "Known traps"):
// - A record replaces a live row when its `updated_at` is not older than the row's. Timestamps have
//   whole seconds, so same-second updates are normal: on a tie the newcomer wins, except that a
//   webhook payload never replaces a row that came from the upstream's own answer in that second,
//   and an answer never replaces one to a request sent after its own.
// - A tombstone sticks. Only a record fetched from the upstream *after* the tombstone was written
//   brings the row back (a stale payload, or a page fetched before the delete, cannot).
// - A record that carries the upstream's own soft-delete mark (`deleted_at`) is stored tombstoned.
// - Children of a parent are replaced only when the parent row was written and the record carries
//   every include that feeds that child table; a record without includes leaves children alone.
//   A replacement ends with exactly the rows a delete-and-insert would leave, but an existing row
//   whose values (every column and `_raw`, byte for byte) are those of the incoming row at its
//   `_ordinal` is kept as it is (its `_synced_at` too); the others are deleted, the rest inserted.
//   A table whose includes are byte for byte those of the parent row replaced is not touched. So a
//   change to how child rows derive from items (columns, coercion, mappings) must come with a
//
// The writers live in records/: upsert.ts (the parents), children.ts (their child rows),
// tombstone.ts; arrays.ts and identity.ts hold what they share.

export { tombstone } from './records/tombstone.ts'
export { InvalidRecordError, type UpstreamRecord } from './records/types.ts'
export { upsertRecords } from './records/upsert.ts'
