// Seeded randomness, so a seed number always yields the same records, ids and fault decisions.
export interface Random {
  /** A number in [0, 1). */
  next(): number
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number
  pick<T>(items: readonly T[]): T
  chance(probability: number): boolean
}

/** mulberry32: tiny, fast and good enough for test data. */
export function createRandom(seed: number): Random {
  let state = (Math.imul(seed | 0, 0x9e3779b1) ^ 0x85ebca6b) >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return randomFrom(next)
}

/** The helpers over any source of numbers in [0, 1) (a benchmark's own `() => number`). */
export function randomFrom(next: () => number): Random {
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => {
      const item = items[int(0, items.length - 1)]
      if (item === undefined) throw new Error('pick from an empty list')
      return item
    },
    chance: (probability) => probability > 0 && next() < probability,
  }
}
