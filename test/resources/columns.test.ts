import { describe, expect, it } from 'vitest'
import { coerce } from '../../src/resources/columns.ts'

describe('coerce', () => {
  it.each([
    ['bigint', 30016185, 30016185],
    ['bigint', '30016185', 30016185],
    ['bigint', 1.5, null],
    ['bigint', 'abc', null],
    ['bigint', '', null],
    ['integer', 3_000_000_000, null],
    ['text', 2, '2'],
    ['text', 'female_user', 'female_user'],
    ['text', false, 'false'],
    ['numeric', '1234.50', '1234.50'],
    ['numeric', 12, 12],
    ['numeric', 'twelve', null],
    ['boolean', true, true],
    ['boolean', '1', true],
    ['boolean', 'yes', null],
    ['timestamptz', '2022-12-14T15:53:43.000+01:00', '2022-12-14T15:53:43.000+01:00'],
    ['timestamptz', '2022-12-14T14:53:43Z', '2022-12-14T14:53:43Z'],
    ['timestamptz', '2022-12-14T15:53:43+0100', '2022-12-14T15:53:43+0100'],
    ['timestamptz', '2022-13-14T15:53:43Z', null],
    ['timestamptz', '2022-02-30T10:00:00Z', null],
    ['timestamptz', 'yesterday', null],
    ['timestamptz', 1670000000, null],
    ['date', '2022-12-31', '2022-12-31'],
    ['date', '31.12.2022', '2022-12-31'],
    ['date', '2022-12-31T00:00:00+01:00', '2022-12-31'],
    ['date', '2022-02-30', null],
    ['jsonb', { id: 1 }, { id: 1 }],
    ['text', null, null],
    ['text', undefined, null],
  ] as const)('%s from %j is %j', (type, value, expected) => {
    expect(coerce(type, value)).toEqual(expected)
  })
})

// PostgreSQL's numeric: at most 131072 digits before the point, 16383 after it, |exponent| < 2^30 - 1.
describe('coerce to numeric', () => {
  it.each([
    ['1e131071 (white space around)', ' 1e131071 ', true],
    ['1e131072', '1e131072', false],
    ['0.001e131074', '0.001e131074', true],
    ['1e-16383', '1e-16383', true],
    ['1e-16384', '1e-16384', false],
    ['0e-16384', '0e-16384', false],
    ['0e1073741822', '0e1073741822', true],
    ['0e1073741823', '0e1073741823', false],
    ['-000 and 131072 nines .5', `-000${'9'.repeat(131_072)}.5`, true],
    ['1 and 131072 zeros', `1${'0'.repeat(131_072)}`, false],
    ['. and 16383 fives', `.${'5'.repeat(16_383)}`, true],
    ['. and 16384 fives', `.${'5'.repeat(16_384)}`, false],
    ['. and 16384 fives e1', `.${'5'.repeat(16_384)}e1`, true],
  ])('%s', (_, value, accepted) => {
    expect(coerce('numeric', value)).toBe(accepted ? value.trim() : null)
  })
})

// The implementation of timestamps before the fast path, kept as the reference the fast path must match
// (with what PostgreSQL refuses since: offset minutes past 59, white space other than ASCII before the
// zone, more than 128 characters, a date at once followed by a negative offset).
const REFERENCE_ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?[ \t\n\v\f\r]*(?:Z|[+-](\d{2})(?::?(\d{2}))?)?$/i

function referenceTimestamp(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  const match = REFERENCE_ISO_TIMESTAMP.exec(trimmed)
  if (!match || trimmed.length > 128 || (match[4] === undefined && trimmed[10] === '-')) return null
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = match
    .slice(1)
    .map((part) => Number(part ?? 0))
  const calendar = (y: number, m: number, d: number) => {
    const date = new Date(Date.UTC(y, m - 1, d))
    return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d
  }
  const valid =
    calendar(year as number, month as number, day as number) &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 59 &&
    (offsetHours as number) <= 15 &&
    (offsetMinutes as number) <= 59
  return valid ? trimmed : null
}

describe('coerce to timestamptz', () => {
  it.each([
    '2022-12-14T15:53:43.000+01:00',
    '2022-12-14T15:53:43Z',
    '2022-12-14t15:53:43z',
    '2022-12-14 15:53:43',
    '2022-12-14T15:53:43.123456-05:30',
    '2022-12-14T15:53:43+0100',
    '2022-12-14T15:53:43+01',
    '2022-12-14T15:53:43 +01:00',
    ' 2022-12-14T15:53:43Z ',
    '2022-12-14T15:53',
    '2022-12-14',
    '2024-02-29T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2100-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '0099-01-01T00:00:00Z',
    '0100-01-01T00:00:00Z',
    '2022-00-10T00:00:00Z',
    '2022-04-31T00:00:00Z',
    '2022-04-00T00:00:00Z',
    '2022-12-14T24:00:00Z',
    '2022-12-14T23:60:00Z',
    '2022-12-14T23:59:60Z',
    '2022-12-14T10:00:00+16:00',
    '2022-12-14T10:00:00+15:99',
    '2022-12-14T10:00:00.Z',
    '2022-12-14T10:00:00.5',
    '2022-12-14T10:00:00+1:00',
    '2022-12-14T10:00:00+01:0',
    '2022-12-14T10:00:00+01:000',
    '2022-12-14T10:00:00Zx',
    '2022-12-14X10:00:00Z',
    '2022-12-14T10:00:00\u00a0',
    '2022-12-14T10:00:00\u00a0Z',
    '2022-12-14T10:00:00\tZ',
    '2022-12-14T10:00:00+01:60',
    '2022-12-14T10:00:00+0159',
    '2022-12-14T10:00:00-0160',
    '2022-12-14-05:00',
    '2022-12-14 -05:00',
    '2022-12-14+05:00',
    `2022-12-14T10:00:00.${'1'.repeat(108)}Z`,
    `2022-12-14T10:00:00.${'1'.repeat(109)}Z`,
    ` 2022-12-14 10:00:00.${'1'.repeat(109)}Z `,
  ])('%j as before', (value) => {
    expect(coerce('timestamptz', value)).toBe(referenceTimestamp(value))
  })

  it('gives the answer of the general path over many generated strings', () => {
    // A deterministic generator: valid stamps, then each character replaced, dropped or doubled.
    let seed = 42
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const pad = (n: number, width = 2) => String(n).padStart(width, '0')
    const alphabet = '0123456789-:T tZz+.x\u00a0'
    let compared = 0
    for (let i = 0; i < 3000; i++) {
      const zones = [
        '',
        'Z',
        'z',
        `+${pad(random(17))}:${pad(random(61))}`,
        `-${pad(random(17))}${pad(random(61))}`,
        `+${pad(random(17))}`,
      ]
      const fraction = ['', '.000', `.${random(1_000_000)}`, '.'][random(4)]
      const base =
        `${pad(random(3000), 4)}-${pad(random(14))}-${pad(random(33))}${['T', 't', ' '][random(3)]}` +
        `${pad(random(25))}:${pad(random(61))}:${pad(random(61))}${fraction}${zones[random(zones.length)]}`
      const at = random(base.length)
      const char = alphabet[random(alphabet.length)] as string
      for (const value of [
        base,
        base.slice(0, at) + char + base.slice(at + 1),
        base.slice(0, at) + base.slice(at + 1),
        base.slice(0, at) + char + base.slice(at),
      ]) {
        expect([value, coerce('timestamptz', value)]).toEqual([value, referenceTimestamp(value)])
        compared++
      }
    }
    expect(compared).toBe(12_000)
  })
})
