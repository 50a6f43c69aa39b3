// Column types of the mirror, and how an upstream value becomes a value PostgreSQL accepts.
// Coercion never throws: a value the column cannot hold becomes null (the record's `_raw` keeps it).

export type SqlType = 'bigint' | 'integer' | 'text' | 'numeric' | 'boolean' | 'timestamptz' | 'date' | 'jsonb'

/** What a column of that type reads back as (see `src/store/database.ts` for the type parsers). */
export type SqlValue<T extends SqlType> = T extends 'bigint' | 'integer'
  ? number
  : T extends 'boolean'
    ? boolean
    : T extends 'timestamptz'
      ? Date
      : T extends 'jsonb'
        ? unknown
        : string

export interface Column<T extends SqlType = SqlType> {
  type: T
  /** Upstream key, when it differs from the column name. */
  from?: string
  /** Maps the upstream value before coercion (e.g. the reservation service's `newsletter: false`). */
  map?: (value: unknown) => unknown
}

export const bigint: Column<'bigint'> = { type: 'bigint' }
export const integer: Column<'integer'> = { type: 'integer' }
export const text: Column<'text'> = { type: 'text' }
export const numeric: Column<'numeric'> = { type: 'numeric' }
export const boolean: Column<'boolean'> = { type: 'boolean' }
export const timestamptz: Column<'timestamptz'> = { type: 'timestamptz' }
export const date: Column<'date'> = { type: 'date' }
export const jsonb: Column<'jsonb'> = { type: 'jsonb' }

const INT4_MAX = 2_147_483_647
// White space between the time and the zone is PostgreSQL's (ASCII only: it refuses U+00A0 and the like).
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?[ \t\n\v\f\r]*(?:Z|[+-](\d{2})(?::?(\d{2}))?)?$/i
/**
 * PostgreSQL refuses a date/time text longer than its parse buffer (MAXDATELEN, 128, plus a little):
 * "invalid input syntax". Longer stamps (a fraction of a hundred digits) are taken as not stamps.
 */
const MAX_TIMESTAMP_LENGTH = 128
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})/
const DAY_MONTH_YEAR = /^(\d{1,2})[.\-/](\d{1,2})[.\-/](\d{4})$/
// One way to match each text (no nested choices over the same digits): a long run of digits that
// is not a decimal fails in linear time (`\d+\.?\d*` took seconds for 30,000 digits and a letter).
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/
const EXPONENT = /[eE]/
// PostgreSQL's numeric: at most 131072 digits before the decimal point (a base-10000 weight of at
// most 32767), at most 16383 after it (the display scale), an exponent below INT_MAX / 2. Beyond
// them the input fails: "value overflows numeric format".
const NUMERIC_MAX_MAGNITUDE = 131_071
const NUMERIC_MAX_SCALE = 16_383
const NUMERIC_MAX_EXPONENT = 1_073_741_823

function toInteger(value: unknown, max: number): number | null {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  return typeof number === 'number' && Number.isInteger(number) && Math.abs(number) <= max ? number : null
}

/** Whether numeric's input takes `text` (a DECIMAL with an exponent, or very long). */
function fitsNumeric(text: string): boolean {
  let end = text.search(EXPONENT)
  const exponent = end < 0 ? 0 : Number(text.slice(end + 1))
  if (end < 0) end = text.length
  if (!(Math.abs(exponent) < NUMERIC_MAX_EXPONENT)) return false
  let point = text.indexOf('.')
  if (point < 0) point = end
  // Digits after the point, less the exponent: the scale PostgreSQL keeps.
  if ((point < end ? end - point - 1 : 0) - exponent > NUMERIC_MAX_SCALE) return false
  let first = text.charCodeAt(0) === 43 || text.charCodeAt(0) === 45 ? 1 : 0 // + -
  while (first < end && !(text.charCodeAt(first) >= 49 && text.charCodeAt(first) <= 57)) first++
  if (first === end) return true // zero
  // The power of ten of the first significant digit.
  const magnitude = (first < point ? point - first - 1 : point - first) + exponent
  return magnitude <= NUMERIC_MAX_MAGNITUDE
}

function toNumeric(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (typeof value !== 'string') return null
  const text = value.trim()
  if (!DECIMAL.test(text)) return null
  // Short and without an exponent (the common case): within every limit, whatever the digits.
  if (text.length <= NUMERIC_MAX_SCALE && text.indexOf('e') < 0 && text.indexOf('E') < 0) return text
  return fitsNumeric(text) ? text : null
}

function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

function toDate(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  const iso = ISO_DATE.exec(trimmed)
  const parts = iso
    ? [Number(iso[1]), Number(iso[2]), Number(iso[3])]
    : (DAY_MONTH_YEAR.exec(trimmed)?.slice(1).reverse().map(Number) ?? null)
  if (!parts) return null
  const [year, month, day] = parts as [number, number, number]
  if (!isCalendarDate(year, month, day)) return null
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`
}

/** The value of the two ASCII digits at `at`, or -1. */
function twoDigits(text: string, at: number): number {
  const tens = text.charCodeAt(at) - 48
  const ones = text.charCodeAt(at + 1) - 48
  return tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9 ? tens * 10 + ones : -1
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * The common form `YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH[:MM]|±HHMM]`, checked by character codes: true or
 * false when the string has that form (valid or not), undefined when it does not (the regular
 * expression decides). Gives exactly the answer of the general path below, without allocating.
 */
function fastTimestamp(text: string): boolean | undefined {
  const length = text.length
  if (length < 19) return undefined
  const century = twoDigits(text, 0)
  const yy = twoDigits(text, 2)
  const month = twoDigits(text, 5)
  const day = twoDigits(text, 8)
  const hour = twoDigits(text, 11)
  const minute = twoDigits(text, 14)
  const second = twoDigits(text, 17)
  const t = text.charCodeAt(10)
  if (
    century < 0 ||
    yy < 0 ||
    month < 0 ||
    day < 0 ||
    hour < 0 ||
    minute < 0 ||
    second < 0 ||
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    (t !== 84 && t !== 116 && t !== 32) || // T t space
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58
  ) {
    return undefined
  }
  let at = 19
  if (text.charCodeAt(at) === 46) {
    // .fraction: at least one digit
    at++
    const digits = at
    while (at < length && text.charCodeAt(at) >= 48 && text.charCodeAt(at) <= 57) at++
    if (at === digits) return undefined
  }
  let offsetHours = 0
  let offsetMinutes = 0
  if (at < length) {
    const zone = text.charCodeAt(at)
    if (zone === 90 || zone === 122) {
      // Z z
      if (at + 1 !== length) return undefined
    } else if (zone === 43 || zone === 45) {
      // + -: HH, HH:MM or HHMM, then the end
      offsetHours = twoDigits(text, at + 1)
      if (offsetHours < 0) return undefined
      const rest = length - (at + 3)
      if (rest === 0) {
        // ±HH
      } else if (rest === 2) {
        offsetMinutes = twoDigits(text, at + 3)
        if (offsetMinutes < 0) return undefined
      } else if (rest === 3) {
        offsetMinutes = twoDigits(text, at + 4)
        if (text.charCodeAt(at + 3) !== 58 || offsetMinutes < 0) return undefined
      } else {
        return undefined
      }
    } else {
      return undefined
    }
  }
  const year = century * 100 + yy
  // Years below 100 fail isCalendarDate (Date.UTC reads them as 19xx); leave them, and the 29th to
  // 31st, to it.
  const calendar =
    year >= 100 && month >= 1 && month <= 12 && day >= 1 && day <= 28
      ? true
      : month >= 1 &&
        month <= 12 &&
        day <= (DAYS_IN_MONTH[month - 1] as number) &&
        isCalendarDate(year, month, day)
  return (
    calendar &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    offsetHours <= 15 &&
    offsetMinutes <= 59 &&
    length <= MAX_TIMESTAMP_LENGTH
  )
}

function toTimestamp(value: unknown): string | null {
  if (typeof value !== 'string') return null
  // No surrounding white space (the first character is a digit, the last a digit or Z): the fast path.
  const fast = fastTimestamp(value)
  if (fast !== undefined) return fast ? value : null
  const trimmed = value.trim()
  if (trimmed.length > MAX_TIMESTAMP_LENGTH) return null
  const match = ISO_TIMESTAMP.exec(trimmed)
  // A date, then at once a negative offset (`2022-12-14-05:00`), reads as a malformed date to PostgreSQL.
  if (!match || (match[4] === undefined && trimmed.charCodeAt(10) === 45)) return null
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = match
    .slice(1)
    .map((part) => Number(part ?? 0))
  const valid =
    isCalendarDate(year as number, month as number, day as number) &&
    (hour as number) <= 23 &&
    (minute as number) <= 59 &&
    (second as number) <= 59 &&
    (offsetHours as number) <= 15 &&
    (offsetMinutes as number) <= 59
  return valid ? trimmed : null
}

function toBoolean(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value
  if (value === 1 || value === '1' || value === 'true') return true
  if (value === 0 || value === '0' || value === 'false') return false
  return null
}

/** A JSON value that PostgreSQL's input function of `type` accepts, or null. */
export function coerce(type: SqlType, value: unknown): unknown {
  if (value === undefined || value === null) return null
  switch (type) {
    case 'bigint':
      return toInteger(value, Number.MAX_SAFE_INTEGER)
    case 'integer':
      return toInteger(value, INT4_MAX)
    case 'numeric':
      return toNumeric(value)
    case 'boolean':
      return toBoolean(value)
    case 'timestamptz':
      return toTimestamp(value)
    case 'date':
      return toDate(value)
    case 'text':
      if (typeof value === 'string') return value
      if (typeof value === 'number' || typeof value === 'boolean') return String(value)
      return JSON.stringify(value)
    case 'jsonb':
      return value
  }
}
