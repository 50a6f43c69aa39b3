// What comparing one table of the mirror with the sandbox's truth finds (mirror-truth.ts, and
// member-truth.ts for member tables): counts, and the first differences.
import type { RecordId } from '../src/resources/index.ts'

export interface Difference {
  table: string
  id: RecordId
  /** `missing`, `tombstoned`, `stale` (live in the mirror, deleted upstream), or what differs. */
  what: string
}

export interface TableTruth {
  table: string
  /** Live records upstream. */
  upstream: number
  /** Of them, those whose live row matches in every compared respect. */
  inSync: number
  /** Rows live in the mirror whose record is gone upstream. */
  stale: number
  /** The first differences, at most `limit` of them. */
  differences: Difference[]
}
