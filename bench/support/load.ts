// An HTTP load generator for the receiver: keep-alive connections over node:http, closed loop (each
// connection sends its next delivery when the last is answered: the most the receiver can take) or
// open loop (deliveries sent on a fixed schedule, latency counted from the scheduled time, so that a
// slow answer delays the measure rather than the schedule). Each run also reports how late this
// process's own event loop ran meanwhile: a request due while it was held up is sent late and its
// latency counts the wait, so that delay is part of every figure, whatever the receiver.
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { sleep } from './stats.ts'

export interface Delivery {
  path: string
  body: string
}

export interface LoadOptions {
  /** Base URLs of the receivers; connections (or scheduled deliveries) are spread over them. */
  targets: string[]
  /** The next delivery to send. */
  next: () => Delivery
  connections: number
  seconds: number
}

export interface LoadResult {
  seconds: number
  sent: number
  /** Answers 200. */
  acknowledged: number
  statuses: Record<string, number>
  errors: number
  /** Acknowledged deliveries per second. */
  rate: number
  /** Milliseconds per acknowledged delivery. */
  latencies: number[]
  /** How late this process's event loop ran during the run (ms): the generator's own share. */
  generatorDelay: { p99Ms: number; maxMs: number }
}

/** Starts measuring this process's event-loop delay; the stop gives its p99 and maximum in ms. */
function loopDelay(): () => LoadResult['generatorDelay'] {
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  return () => {
    histogram.disable()
    return { p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6 }
  }
}

function post(agent: http.Agent, target: URL, delivery: Delivery): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: delivery.path,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(delivery.body) },
      },
      (response) => {
        response.resume()
        response.on('end', () => resolve(response.statusCode ?? 0))
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(delivery.body)
  })
}

function tally() {
  const result = { sent: 0, acknowledged: 0, statuses: {} as Record<string, number>, errors: 0 }
  const latencies: number[] = []
  return {
    result,
    latencies,
    async send(agent: http.Agent, target: URL, delivery: Delivery, since: number) {
      result.sent++
      try {
        const status = await post(agent, target, delivery)
        result.statuses[status] = (result.statuses[status] ?? 0) + 1
        if (status === 200) {
          result.acknowledged++
          latencies.push(performance.now() - since)
        }
      } catch {
        result.errors++
      }
    },
  }
}

function agents(options: LoadOptions) {
  const perTarget = Math.ceil(options.connections / options.targets.length)
  return options.targets.map((url) => ({
    url: new URL(url),
    agent: new http.Agent({ keepAlive: true, maxSockets: perTarget }),
  }))
}

/** Every connection sends back to back for `seconds`. */
export async function closedLoop(options: LoadOptions): Promise<LoadResult> {
  const pool = agents(options)
  const counts = tally()
  const delay = loopDelay()
  const started = performance.now()
  const until = started + options.seconds * 1000
  await Promise.all(
    Array.from({ length: options.connections }, async (_, i) => {
      const { url, agent } = pool[i % pool.length] as (typeof pool)[number]
      while (performance.now() < until) await counts.send(agent, url, options.next(), performance.now())
    }),
  )
  const seconds = (performance.now() - started) / 1000
  for (const { agent } of pool) agent.destroy()
  return {
    ...counts.result,
    seconds,
    rate: counts.result.acknowledged / seconds,
    latencies: counts.latencies,
    generatorDelay: delay(),
  }
}

/** `rate` deliveries per second on a fixed schedule for `seconds`, over at most `connections`. */
export async function openLoop(options: LoadOptions & { rate: number }): Promise<LoadResult> {
  const pool = agents(options)
  const counts = tally()
  const total = Math.round(options.rate * options.seconds)
  const interval = 1000 / options.rate
  const inFlight = new Set<Promise<void>>()
  const delay = loopDelay()
  const started = performance.now()
  let issued = 0
  while (issued < total) {
    const due = Math.min(total, Math.floor((performance.now() - started) / interval) + 1)
    for (; issued < due; issued++) {
      const { url, agent } = pool[issued % pool.length] as (typeof pool)[number]
      const sending = counts.send(agent, url, options.next(), started + issued * interval)
      inFlight.add(sending)
      void sending.finally(() => inFlight.delete(sending))
    }
    await sleep(1)
  }
  await Promise.all(inFlight)
  const seconds = (performance.now() - started) / 1000
  for (const { agent } of pool) agent.destroy()
  return {
    ...counts.result,
    seconds,
    rate: counts.result.acknowledged / seconds,
    latencies: counts.latencies,
    generatorDelay: delay(),
  }
}
