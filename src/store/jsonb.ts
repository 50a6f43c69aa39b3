// What PostgreSQL's jsonb can hold. Its text cannot contain NUL, and JSON escapes of half a surrogate
// pair are refused, while JSON itself allows both (`"\u0000"`, `"\ud800"`). A value that carries one
// would fail the whole statement it is in: a webhook could not be kept, and a sweep's page, with the
// 499 good records beside the bad one, could never be written. Every value from outside is therefore
// made storable before it is kept: NUL and lone surrogates become U+FFFD, in keys and in values.
//
// Numbers have limits too: jsonb keeps them as numeric, which refuses an exponent or a run of digits
// beyond its range (`1e200000`, `1e-16384`) although JSON allows any. JSON.parse reads such a number
// as Infinity or 0, so a value re-serialized from JavaScript always fits; a text taken as it came
// (a webhook body) must be checked (`numbersFit`).
//
// Nesting has a limit too: JavaScript cannot serialize a value nested some 4,500 levels deep (its
// stack), PostgreSQL cannot parse one of some 12,000 (`max_stack_depth`). A stored value keeps
// MAX_DEPTH levels; below them `storable` puts null. No CRM record comes near: this is for input that
// is broken or hostile. Nothing else changes.

import { coerce } from '../resources/columns.ts'

/** Levels of arrays and objects a stored value keeps. */
export const MAX_DEPTH = 1000

/**
 * The value with every string jsonb cannot hold made storable (NUL and lone surrogates as U+FFFD),
 * and null in place of arrays and objects nested below MAX_DEPTH levels.
 */
export function storable(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.toWellFormed().replaceAll('\u0000', '\uFFFD')
  if (typeof value !== 'object' || value === null) return value
  if (depth >= MAX_DEPTH) return null
  if (Array.isArray(value)) return value.map((item) => storable(item, depth + 1))
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [storable(key) as string, storable(inner, depth + 1)]),
  )
}

/** JSON text, or undefined when the value is nested too deep for JavaScript to serialize. */
export function serialize(value: unknown): string | undefined {
  try {
    return JSON.stringify(value)
  } catch (error) {
    if (error instanceof RangeError) return undefined
    throw error
  }
}

/** Whether valid JSON `text` nests arrays and objects more than `levels` deep. */
export function nestedDeeperThan(text: string, levels: number): boolean {
  // Each level takes two characters at least.
  if (text.length <= 2 * levels) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 92)
        i++ // \ escapes the next character
      else if (code === 34) inString = false // "
    } else if (code === 34) {
      inString = true
    } else if (code === 91 || code === 123) {
      // [ {
      if (++depth > levels) return true
    } else if (code === 93 || code === 125) {
      depth-- // ] }
    }
  }
  return false
}

// A JSON escape that decodes to NUL or to half of a surrogate pair: text jsonb cannot hold. (An
// escaped backslash before `u` also matches; such a text just takes the slower way.)
const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/

/**
 * The JSON text itself when jsonb can store what it parses to as it is; undefined when the parsed
 * value must go through `storable`. (A NUL or a lone surrogate can only reach parsed JSON by an
 * escape, or as a lone surrogate in the text itself.)
 */
export function storableText(text: string): string | undefined {
  return text.isWellFormed() && !UNSTORABLE_ESCAPE.test(text) ? text : undefined
}

const isDigit = (code: number) => code >= 48 && code <= 57
// - + . e E and digits: what a JSON number is made of.
const inNumber = (code: number) =>
  isDigit(code) || code === 45 || code === 43 || code === 46 || code === 101 || code === 69

/**
 * Whether every number in valid JSON `text` fits PostgreSQL's numeric, as jsonb needs. Short numbers
 * without an exponent always do; the others are checked by numeric's limits (`coerce`).
 */
export function numbersFit(text: string): boolean {
  let inString = false
  let start = -1
  let exponent = false
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 32
    if (inString) {
      if (code === 92)
        i++ // \ escapes the next character
      else if (code === 34) inString = false // "
    } else if (start >= 0) {
      if (inNumber(code)) {
        if (code === 101 || code === 69) exponent = true
      } else {
        if ((exponent || i - start > 300) && coerce('numeric', text.slice(start, i)) === null) return false
        start = -1
        exponent = false
      }
    } else if (code === 34) {
      inString = true
    } else if (isDigit(code) || code === 45) {
      // a number starts with a digit or a minus (the e of true and false is no number)
      start = i
    }
  }
  return true
}
