// Part 1 of which write wins, as a table: of one record's payloads in a batch, the one applied and
// whether the record is fetched too. (Part 2, a record against the row, is records.test.ts's, against
// PostgreSQL.)
import { describe, expect, it } from 'vitest'
import { judgePayloads } from '../../src/store/records/which-wins.ts'

const now = Date.parse('2026-11-27T12:00:00Z')
const at = (seconds: number) => new Date(now + seconds * 1000).toISOString()

describe('judgePayloads', () => {
  it.each([
    {
      case: 'one payload, newer than the row',
      times: [at(-5)],
      held: new Date(now - 10_000),
      apply: 0,
      fetch: null,
    },
    { case: 'one payload, no row', times: [at(-5)], held: undefined, apply: 0, fetch: null },
    {
      case: 'the newest of three, in any order',
      times: [at(-3), at(-1), at(-2)],
      held: null,
      apply: 1,
      fetch: null,
    },
    {
      case: 'the row holds the same second',
      times: [at(-5)],
      held: new Date(now - 5_000),
      apply: 0,
      fetch: 0,
    },
    {
      case: 'two share the newest second: the last of them',
      times: [at(-1), at(-2), at(-1)],
      held: null,
      apply: 2,
      fetch: 2,
    },
    {
      case: 'one without a usable updated_at',
      times: [at(-1), 'yesterday'],
      held: null,
      apply: null,
      fetch: 0,
    },
    { case: 'dated two minutes ahead', times: [at(-1), at(120)], held: null, apply: null, fetch: 1 },
    { case: 'dated 50 s ahead (clock skew)', times: [at(50)], held: null, apply: 0, fetch: null },
  ])('$case', ({ times, held, apply, fetch }) => {
    expect(judgePayloads(times, held, now)).toEqual({ apply, fetch })
  })
})
