// What jsonb can hold: strings made storable, nesting cut below MAX_DEPTH, and the depth of JSON text
// judged without parsing it (brackets inside strings are text, not levels).
import { describe, expect, it } from 'vitest'
import {
  MAX_DEPTH,
  nestedDeeperThan,
  numbersFit,
  serialize,
  storable,
  storableText,
} from '../../src/store/jsonb.ts'

const brackets = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`

describe('nestedDeeperThan', () => {
  it('counts the levels of arrays and objects', () => {
    expect(nestedDeeperThan(brackets(3), 3)).toBe(false)
    expect(nestedDeeperThan(brackets(4), 3)).toBe(true)
    expect(nestedDeeperThan('{"a": {"b": [1, {"c": 2}]}}', 3)).toBe(true)
    expect(nestedDeeperThan('{"a": {"b": [1, {"c": 2}]}}', 4)).toBe(false)
    // Levels that close before the next opens do not add up.
    expect(nestedDeeperThan(`[${Array(50).fill(brackets(2)).join(',')}]`, 3)).toBe(false)
  })

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ a: `say \\"[[[[{{{{ ${'['.repeat(100)}`, b: ['"]"'] })
    expect(nestedDeeperThan(text, 2)).toBe(false)
    expect(nestedDeeperThan(JSON.stringify({ a: '\\', b: [[[1]]] }), 3)).toBe(true)
  })
})

describe('storable', () => {
  it('replaces NUL and lone surrogates, in keys and values, and leaves the rest as it is', () => {
    const value = { 'k\u0000': ['a\u0000b', 'x\ud800'], n: 1.5, t: true, z: null, s: 'Ümlaut 😀' }
    expect(storable(value)).toEqual({
      'k\uFFFD': ['a\uFFFDb', 'x\uFFFD'],
      n: 1.5,
      t: true,
      z: null,
      s: 'Ümlaut 😀',
    })
    expect(storableText(JSON.stringify(value))).toBeUndefined()
    expect(storableText(JSON.stringify(storable(value)))).toBeDefined()
  })

  it('keeps MAX_DEPTH levels and puts null below them', () => {
    let deep: unknown = 'leaf'
    for (let i = 0; i < 10_000; i++) deep = [deep]
    expect(serialize(deep)).toBeUndefined()
    const text = serialize(storable(deep)) as string
    expect(text).toBe(`${'['.repeat(MAX_DEPTH)}null${']'.repeat(MAX_DEPTH)}`)
  })
})

describe('numbersFit', () => {
  it.each([
    [
      'plain numbers, literals and strings',
      '{"a": -1.5, "b": [true, false, null], "c": "1e999999", "d": 1e300}',
      true,
    ],
    ['an exponent beyond numeric', '{"a": 1e131072}', false],
    ['a negative exponent beyond its scale', '[1e-16384]', false],
    ['an exponent at the end of the text', '1E-16383', true],
    ['300 digits', `[${'9'.repeat(300)}]`, true],
    ['131,072 digits before the point', `[${'9'.repeat(131_072)}]`, true],
    ['131,073 digits before the point', `[${'9'.repeat(131_073)}]`, false],
    ['16,384 digits after the point', `[0.${'1'.repeat(16_384)}]`, false],
    ['numbers in strings, escaped quotes included', `{"a": "\\" 1e999999 \\"", "b": 2}`, true],
  ])('%s', (_, text, fits) => {
    JSON.parse(text) // valid JSON, as the receiver has it
    expect(numbersFit(text)).toBe(fits)
  })
})
