// Plain counters of the upstream traffic; the Prometheus endpoint reads them with `samples()`.

export type Labels = Record<string, string>

export interface Counter {
  add(labels: Labels, amount?: number): void
  samples(): { labels: Labels; value: number }[]
}

function createCounter(): Counter {
  const values = new Map<string, { labels: Labels; value: number }>()
  return {
    add(labels, amount = 1) {
      const key = JSON.stringify(Object.entries(labels).sort())
      const entry = values.get(key) ?? { labels: { ...labels }, value: 0 }
      entry.value += amount
      values.set(key, entry)
    },
    samples: () => [...values.values()].map((entry) => ({ labels: { ...entry.labels }, value: entry.value })),
  }
}

export interface UpstreamMetrics {
  /** Answers and failed attempts, by `upstream`, `route` (e.g. `people.index`) and `status` (code, `timeout`, `network`). */
  requests: Counter
  /** Attempts repeated, by `upstream`, `route` and `reason`. */
  retries: Counter
  /** Seconds spent waiting for the shared budget (its window or a 429 pause), by `upstream`. */
  throttledSeconds: Counter
  /** Times the shared budget narrowed after a 429 at its limit, by `upstream`. */
  budgetNarrowed: Counter
  /**
   * Upstreams whose last answer in this process refused the key (401 or 403), with that answer; an
   * upstream leaves it at its next answer of 2xx. Readiness and `crm_sync_upstream_auth_failing`.
   */
  authFailures: Map<string, AuthFailure>
}

export interface AuthFailure {
  status: number
  message: string
  at: Date
}

export function createUpstreamMetrics(): UpstreamMetrics {
  return {
    requests: createCounter(),
    retries: createCounter(),
    throttledSeconds: createCounter(),
    budgetNarrowed: createCounter(),
    authFailures: new Map(),
  }
}

/** The sum of a counter's samples whose labels include `match`. */
export function total(counter: Counter, match: Labels = {}): number {
  return counter
    .samples()
    .filter((sample) => Object.entries(match).every(([name, value]) => sample.labels[name] === value))
    .reduce((sum, sample) => sum + sample.value, 0)
}
