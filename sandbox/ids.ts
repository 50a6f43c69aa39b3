// Ids like the upstream's: large, increasing, with gaps (other accounts share the sequences), so a
// client that assumes small or dense ids fails here as it would against the real service.
import { createRandom } from './random.ts'

const BASES = {
  person: 30_000_000,
  company: 11_000_000,
  deal: 2_400_000,
  project: 610_000,
  task: 81_000_000,
  user: 117_000,
  tag: 120_000_000,
  addr: 28_700_000,
  detail: 65_000_000,
  position: 22_000_000,
  hook: 40_000,
  contact: 180_000,
  booking: 2_200_000,
  protocol: 43_000_000,
  avatar: 9_100_000,
  connection: 4_800_000,
  historic_event: 5_300_000,
  assi: 1_900_000,
} as const

/** A kind of id; one without a base of its own (a plain kind's wrapper) gets one from its name. */
export type IdKind = keyof typeof BASES | (string & {})

function baseOf(kind: IdKind): number {
  if (Object.hasOwn(BASES, kind)) return BASES[kind as keyof typeof BASES]
  let hash = 0
  for (const char of kind) hash = (hash * 31 + (char.codePointAt(0) ?? 0)) % 1000
  return (1 + hash) * 100_000
}

export interface Ids {
  next(kind: IdKind): number
}

export function createIds(seed: number): Ids {
  // A stream of its own: changing what the seed generator draws must not shift the ids.
  const random = createRandom(seed ^ 0x5eed1d5)
  const last = new Map<IdKind, number>()
  return {
    next(kind) {
      const previous = last.get(kind) ?? baseOf(kind) + random.int(0, 99_999)
      const id = previous + random.int(1, 37)
      last.set(kind, id)
      return id
    },
  }
}
