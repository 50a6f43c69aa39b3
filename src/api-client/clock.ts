// Time as the client sees it. Injected so that tests can run hours of waiting in no time.
import { setTimeout as delay } from 'node:timers/promises'

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /**
   * Resolves at `time` (ms since the epoch) or later; at once when that has passed, or once `signal`
   * is aborted (a clock may ignore it: `sleepUntil` below ends the wait anyway).
   */
  sleepUntil(time: number, signal?: AbortSignal): Promise<void>
  /**
   * Whether the shared budget reads this clock instead of PostgreSQL's. PostgreSQL's clock is the
   * one every replica agrees on, so only a test clock sets this.
   */
  drivesBudget: boolean
}

/** `clock.sleepUntil(time)`, ended early (resolving) once `signal` is aborted. */
export async function sleepUntil(clock: Clock, time: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return clock.sleepUntil(time)
  if (signal.aborted) return
  let onAbort = () => {}
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    await Promise.race([clock.sleepUntil(time, signal), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleepUntil: async (time, signal) => {
    const ms = time - Date.now()
    // Cleared when aborted: a timer left running would keep a stopped process alive until it fires.
    if (ms > 0) await delay(ms, undefined, { signal }).catch(() => {})
  },
  drivesBudget: false,
}
