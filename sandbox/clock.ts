// Time as the upstream sees it. Tests inject a manual clock so timestamps and the rate-limit window
// are deterministic and fast; the demo runs on the system clock.
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

export interface ManualClock extends Clock {
  advance(milliseconds: number): void
  set(time: number | string): void
}

export const MANUAL_CLOCK_START = '2024-06-03T08:00:00Z'

export function manualClock(start: number | string = MANUAL_CLOCK_START): ManualClock {
  let current = toMilliseconds(start)
  return {
    now: () => current,
    advance: (milliseconds) => {
      current += milliseconds
    },
    set: (time) => {
      current = toMilliseconds(time)
    },
  }
}

function toMilliseconds(time: number | string): number {
  const value = typeof time === 'number' ? time : Date.parse(time)
  if (!Number.isFinite(value)) throw new Error(`not a time: ${time}`)
  return value
}

/** The upstream stores whole seconds only, which is why many records share one `updated_at`. */
export function nowSeconds(clock: Clock): number {
  return Math.floor(clock.now() / 1000)
}

function toDate(seconds: number, offsetMinutes: number): Date {
  return new Date((seconds + offsetMinutes * 60) * 1000)
}

function offsetSuffix(offsetMinutes: number): string {
  if (offsetMinutes === 0) return 'Z'
  const sign = offsetMinutes < 0 ? '-' : '+'
  const minutes = Math.abs(offsetMinutes)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${sign}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`
}

// Rendering a page formats thousands of timestamps: the calendar day is formatted once per day
// (kept, a few thousand at most), the time of day by arithmetic.
const DAY = 86_400
const days = new Map<number, string>()
const two = (n: number) => (n < 10 ? `0${n}` : `${n}`)

/** `2022-12-14T15:53:43.000+01:00`: whole seconds in the account's local offset. */
export function formatTimestamp(seconds: number, offsetMinutes: number): string {
  if (!Number.isInteger(seconds) || !Number.isInteger(offsetMinutes)) {
    return toDate(seconds, offsetMinutes).toISOString().slice(0, 23) + offsetSuffix(offsetMinutes)
  }
  const local = seconds + offsetMinutes * 60
  const day = Math.floor(local / DAY)
  let date = days.get(day)
  if (date === undefined) {
    date = new Date(day * DAY * 1000).toISOString().slice(0, 10)
    days.set(day, date)
  }
  const time = local - day * DAY
  const clock = `${two(Math.floor(time / 3600))}:${two(Math.floor((time % 3600) / 60))}:${two(time % 60)}`
  return `${date}T${clock}.000${offsetSuffix(offsetMinutes)}`
}

/** The local calendar day of a moment, `YYYY-MM-DD`. */
export function formatDate(seconds: number, offsetMinutes: number): string {
  return toDate(seconds, offsetMinutes).toISOString().slice(0, 10)
}

/** Seconds since the epoch of an ISO 8601 string, or null when it is not one. */
export function parseTimestamp(value: string): number | null {
  const milliseconds = Date.parse(value)
  return Number.isFinite(milliseconds) ? Math.floor(milliseconds / 1000) : null
}
