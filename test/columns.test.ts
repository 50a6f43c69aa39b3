import { describe, expect, it } from 'vitest'
import { coerce } from '../src/resources/columns.ts'

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
