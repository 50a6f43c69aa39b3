// The outgoing webhook queue. Deliveries go out one at a time in the order of the changes, after
// the API call that caused them has answered (or not: they race, as with the real service).
// Faults are decided when a delivery is queued: dropped, duplicated, or held back so that later
// ones overtake it. drain() lets tests wait for all of it instead of sleeping.
import type { DeliveryCounters, Faults } from './faults.ts'
import type { Random } from './random.ts'

export interface Delivery {
  hookId: number
  url: string
  body: string
}

export interface DeliveryQueueOptions {
  faults(): Faults['deliveries']
  timeoutMs(): number
  random: Random
  counters(): DeliveryCounters
  /** After each attempt: whether the receiver answered 2xx. */
  settled(delivery: Delivery, ok: boolean): void
}

export interface DeliveryQueue {
  enqueue(delivery: Delivery): void
  /** Sends everything queued, held-back deliveries included (after the others: that is the reordering). */
  drain(): Promise<void>
  readonly pending: number
  /** Forgets what is queued and aborts what is in flight. */
  stop(): Promise<void>
}

interface Held {
  delivery: Delivery
  due: number
  timer: ReturnType<typeof setTimeout>
}

export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  let ready: Delivery[] = []
  let head = 0
  const held = new Set<Held>()
  const aborted = new AbortController()
  let worker: Promise<void> | null = null
  let stopped = false

  function wake(): void {
    if (worker || stopped || head >= ready.length) return
    worker = work().finally(() => {
      worker = null
      wake()
    })
  }

  async function work(): Promise<void> {
    while (head < ready.length && !stopped) {
      const delivery = ready[head++] as Delivery
      if (head > 1024 && head * 2 > ready.length) {
        ready = ready.slice(head)
        head = 0
      }
      await send(delivery)
    }
  }

  async function send(delivery: Delivery): Promise<void> {
    const counters = options.counters()
    let ok = false
    if (!options.faults().receiverDown) {
      try {
        const response = await fetch(delivery.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'crm-sync-sandbox' },
          body: delivery.body,
          redirect: 'manual',
          signal: AbortSignal.any([aborted.signal, AbortSignal.timeout(options.timeoutMs())]),
        })
        await response.arrayBuffer().catch(() => undefined)
        ok = response.ok
      } catch {
        ok = false
      }
    }
    if (stopped) return
    if (ok) counters.succeeded++
    else counters.failed++
    options.settled(delivery, ok)
  }

  function hold(delivery: Delivery, milliseconds: number): void {
    const entry: Held = {
      delivery,
      due: performance.now() + milliseconds,
      timer: setTimeout(() => release([entry]), milliseconds),
    }
    entry.timer.unref()
    held.add(entry)
  }

  function release(entries: Held[]): void {
    for (const entry of entries.sort((a, b) => a.due - b.due)) {
      clearTimeout(entry.timer)
      held.delete(entry)
      ready.push(entry.delivery)
    }
    wake()
  }

  return {
    enqueue(delivery) {
      if (stopped) return
      const counters = options.counters()
      const faults = options.faults()
      const { random } = options
      counters.queued++
      if (random.chance(faults.dropRate)) {
        counters.dropped++
        return
      }
      const copies = random.chance(faults.duplicateRate) ? 2 : 1
      if (copies === 2) counters.duplicated++
      for (let copy = 0; copy < copies; copy++) {
        if (random.chance(faults.delayRate)) {
          counters.delayed++
          hold(delivery, random.int(1, Math.max(1, faults.delayMs)))
        } else {
          ready.push(delivery)
        }
      }
      wake()
    },
    async drain() {
      while (!stopped) {
        if (held.size) release([...held])
        if (worker) await worker
        else if (head >= ready.length && !held.size) return
        else wake()
      }
    },
    get pending() {
      return ready.length - head + held.size
    },
    async stop() {
      stopped = true
      for (const entry of held) clearTimeout(entry.timer)
      held.clear()
      ready = []
      head = 0
      aborted.abort()
      await worker
    },
  }
}
