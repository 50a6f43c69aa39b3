// Writes of upstream records into the mirror. At most two statements per batch, whatever its size:
// the parent rows, then the replacement of the children of the parents written whose includes changed.
//
// Which write wins (a record against the row, a payload against others, a tombstone): one rule, in
// records/which-wins.ts, stated as a table in docs/how-sync-works.md, "How rows are written".
// - A record that carries the upstream's own soft-delete mark (`deleted_at`) is stored tombstoned.
// - Children of a parent are replaced only when the parent row was written and the record carries
//   every include that feeds that child table; a record without includes leaves children alone.
//   A replacement ends with exactly the rows a delete-and-insert would leave, but an existing row
//   whose values (every column and `_raw`, byte for byte) are those of the incoming row at its
//   `_ordinal` is kept as it is (its `_synced_at` too); the others are deleted, the rest inserted.
//   A table whose includes are byte for byte those of the parent row replaced is not touched. So a
//   change to how child rows derive from items (columns, coercion, mappings) must come with a
//   migration that rewrites them: equal includes no longer do.
//
// The writers live in records/: upsert.ts (the parents), children.ts (their child rows),
// tombstone.ts; arrays.ts and identity.ts hold what they share; mirrored.ts reads what the mirror
// holds of records read, and whether one brings something it lacks.

export { mirroredStates, newerThanMirror } from './records/mirrored.ts'
export { tombstone } from './records/tombstone.ts'
export { InvalidRecordError, type UpstreamRecord } from './records/types.ts'
export { upsertRecords } from './records/upsert.ts'
export { judgePayloads } from './records/which-wins.ts'
