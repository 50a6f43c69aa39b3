// Plain counters of the receiver, read by the metrics endpoint.
export type Counters = Map<string, number>

export function increment(counters: Counters, key: string, by = 1): void {
  counters.set(key, (counters.get(key) ?? 0) + by)
}
