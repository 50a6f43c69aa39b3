// The sandbox's timestamps: whole seconds in the account's offset, as the real CRM writes them.
import { describe, expect, it } from 'vitest'
import { formatDate, formatTimestamp } from '../../sandbox/clock.ts'

/** The reference: the same instant through Date, shifted into the offset. */
function reference(seconds: number, offsetMinutes: number): string {
  const local = new Date((seconds + offsetMinutes * 60) * 1000).toISOString().slice(0, 23)
  if (offsetMinutes === 0) return `${local}Z`
  const minutes = Math.abs(offsetMinutes)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${local}${offsetMinutes < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`
}

describe('formatTimestamp', () => {
  it('writes the local time of the offset with milliseconds and the offset', () => {
    expect(formatTimestamp(Date.parse('2022-12-14T14:53:43Z') / 1000, 60)).toBe(
      '2022-12-14T15:53:43.000+01:00',
    )
    expect(formatTimestamp(Date.parse('2022-12-31T23:30:00Z') / 1000, 60)).toBe(
      '2023-01-01T00:30:00.000+01:00',
    )
    expect(formatTimestamp(Date.parse('2022-03-01T02:00:00Z') / 1000, -570)).toBe(
      '2022-02-28T16:30:00.000-09:30',
    )
    expect(formatTimestamp(0, 0)).toBe('1970-01-01T00:00:00.000Z')
    expect(formatTimestamp(-1, 0)).toBe('1969-12-31T23:59:59.000Z')
  })

  it('agrees with Date for any second and offset, a fraction of a second included', () => {
    let state = 7
    const random = () => {
      state = (state * 48271) % 2147483647
      return state / 2147483647
    }
    for (let i = 0; i < 20_000; i++) {
      const seconds = Math.floor(random() * 4e9) - 1e9
      const offset = [0, 60, 120, -300, 330, 345, -570, 840][i % 8] as number
      expect(formatTimestamp(seconds, offset)).toBe(reference(seconds, offset))
    }
    expect(formatTimestamp(1_700_000_000.25, 60)).toBe(reference(1_700_000_000.25, 60))
    expect(formatDate(1_700_000_000, 60)).toBe('2023-11-14')
  })
})
