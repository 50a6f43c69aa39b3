// What the seed generators share: the options, the counts per resource, and timestamps in bursts.
import type { Ids } from './ids.ts'
import type { Random } from './random.ts'
import type { ReservationCollection } from './reservation-rows.ts'
import type { Plural } from './rows.ts'
import type { Store } from './store.ts'

/** Every kind of both services, by its collection name (`people`, `contacts`); all listed in seed.ts. */
export type SeededResource = Plural | ReservationCollection
/** Records of each resource, or per resource (those not named get none). */
export type SeedCount = number | Partial<Record<SeededResource, number>>

export interface SeedOptions {
  count: SeedCount
  /** The seed number; the same number gives the same data. */
  seed: number
  /** "Now" in seconds: generated timestamps lie before it. */
  now: number
  offsetMinutes: number
  /**
   * Size of the bulk-edit groups to add: records of each resource that share one `updated_at`, a
   * quarter of them in such groups (at least one group where the resource has twice as many records).
   * Larger than a page, they straddle page boundaries. Default: none beyond the bursts of `moments`.
   */
  ties?: number
  /**
   * Bytes of each seeded attachment's file, least and most (its Base64 `data` is a third larger). Not
   * published: real files run from kilobytes to megabytes. Default 1,024 to 4,096, light for tests.
   */
  attachmentBytes?: { min: number; max: number }
}

export const DAY = 86_400
const SPAN = 2 * 365 * DAY

export const ascii = (text: string) =>
  text.replace(/ä/g, 'ae').replace(/ö/g, 'oe').replace(/ü/g, 'ue').replace(/ß/g, 'ss').replace(/\s+/g, '-')

/** Timestamps in bursts: imports and bulk edits put many records into the same second. */
export function moments(random: Random, now: number) {
  let burst = now - random.int(3600, SPAN)
  const bulkEdits = Array.from({ length: 40 }, () => now - random.int(60, SPAN / 4))
  return {
    created(): number {
      if (!random.chance(0.35)) burst = now - random.int(3600, SPAN)
      return burst
    },
    updated(created: number): number {
      if (random.chance(0.4)) return created
      const bulk = random.pick(bulkEdits)
      if (bulk > created && random.chance(0.3)) return bulk
      return created + random.int(0, Math.max(0, now - 60 - created))
    },
  }
}

/** One run of the generators: one random stream, so the output depends on the seed alone. */
export interface Generation {
  store: Store
  ids: Ids
  random: Random
  options: SeedOptions
  time: ReturnType<typeof moments>
  count(resource: SeededResource): number
}
