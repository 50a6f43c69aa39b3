// What every API call passes before it reaches a route: the key (401), the rate limit per key
// (429 with Retry-After), then the injected faults (latency, fixed or uniform in a range; 500; 429).
// Counts all of it.
import type { Context, MiddlewareHandler } from 'hono'
import type { Clock } from './clock.ts'
import { type Behaviour, bump, type Faults, type ServiceCounters } from './faults.ts'
import type { Random } from './random.ts'

type RateLimit = NonNullable<Behaviour['crmRateLimit']>

export interface GateOptions {
  apiKey: string
  presentedKey(c: Context): string | undefined
  clock: Clock
  random: Random
  faults(): Faults['crm']
  rateLimit(): RateLimit | null
  counters(): ServiceCounters
}

/** A sliding window per key; calls turned away do not count against it. */
export function createRateLimiter(clock: Clock) {
  const recent = new Map<string, number[]>()
  return {
    /** Seconds to wait, or 0 when the call may proceed (and is counted). */
    take(key: string, limit: RateLimit | null): number {
      if (!limit) return 0
      const now = clock.now()
      const window = limit.windowSeconds * 1000
      const times = recent.get(key) ?? []
      while (times.length && (times[0] as number) <= now - window) times.shift()
      recent.set(key, times)
      if (times.length >= limit.requests) {
        return Math.max(1, Math.ceil(((times[0] as number) + window - now) / 1000))
      }
      times.push(now)
      return 0
    },
  }
}

/** `GET /api/people/:id`: numeric segments folded, for the route counters. */
function routeOf(c: Context): string {
  return `${c.req.method} ${c.req.path.replace(/\/\d+(?=\/|$)/g, '/:id')}`
}

const retryLater = (seconds: number) =>
  new Response('Retry later\n', {
    status: 429,
    headers: { 'content-type': 'text/plain', 'retry-after': `${seconds}` },
  })

/** The latency of one call: `latencyMs`, or uniform in [latencyMs, latencyMaxMs] when a range is set. */
export function latencyOf(faults: Faults['crm'], random: Random): number {
  const { latencyMs, latencyMaxMs } = faults
  // No draw without a range: the fault decisions of a seed stay what they were.
  if (latencyMaxMs === null || latencyMaxMs === undefined || latencyMaxMs <= latencyMs) return latencyMs
  return random.int(latencyMs, latencyMaxMs)
}

export function apiGate(options: GateOptions): MiddlewareHandler {
  const limiter = createRateLimiter(options.clock)
  let pausedUntil = 0
  let injectedUntil = 0

  /**
   * A 429 that asks for `seconds` of quiet; counted into `retryAfterMs` past earlier pauses, and into
   * `injectedRetryAfterMs` past earlier injected ones when the upstream throttles of its own accord.
   */
  function throttle(counters: ServiceCounters, seconds: number, injected: boolean): Response {
    const now = options.clock.now()
    const until = now + seconds * 1000
    counters.retryAfterMs += Math.max(0, until - Math.max(now, pausedUntil))
    pausedUntil = Math.max(pausedUntil, until)
    if (injected) {
      counters.injectedRetryAfterMs += Math.max(0, until - Math.max(now, injectedUntil))
      injectedUntil = Math.max(injectedUntil, until)
    }
    return retryLater(seconds)
  }

  async function admit(c: Context, counters: ServiceCounters): Promise<Response | null> {
    const key = options.presentedKey(c)
    if (key !== options.apiKey) {
      return c.json({ error: 'not authorized', description: 'not authorized' }, 401)
    }
    const wait = limiter.take(key, options.rateLimit())
    if (wait) {
      counters.rateLimited++
      return throttle(counters, wait, false)
    }
    const faults = options.faults()
    const latency = latencyOf(faults, options.random)
    if (latency) await new Promise((resolve) => setTimeout(resolve, latency))
    if (options.random.chance(faults.errorRate)) {
      counters.injectedErrors++
      // A proxy in front of the upstream answers with HTML, not JSON.
      return c.html('<html><body><h1>500 Internal Server Error</h1></body></html>', 500)
    }
    if (options.random.chance(faults.throttleRate)) {
      counters.injectedThrottles++
      return throttle(counters, options.random.int(1, 5), true)
    }
    return null
  }

  return async (c, next) => {
    const counters = options.counters()
    counters.requests++
    bump(counters.routes, routeOf(c))
    const early = await admit(c, counters)
    if (early) {
      bump(counters.statuses, String(early.status))
      return early
    }
    await next()
    bump(counters.statuses, String(c.res.status))
  }
}
