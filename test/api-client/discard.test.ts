import { describe, expect, it } from 'vitest'
import { discarder, readWithout } from '../../src/api-client/discard.ts'

/** Runs `text` through a discarder in pieces of `size` characters. */
function strip(text: string, size: number, keys = ['data']): string {
  const filter = discarder(keys)
  let out = ''
  for (let at = 0; at < text.length; at += size) out += filter(text.slice(at, at + size))
  return out
}

const page = [
  { uuid: 'a', data: 'QUJD\\"x', filename: 'data', note: { deeper: { data: 'kept' } } },
  { attachment: { uuid: 'b', data: 'REVG', size: 3 } },
  { uuid: 'c', data: 42, 'da\\ta': 'x', long: 'data'.repeat(40) },
]

describe('discarder', () => {
  it('replaces the string values of discarded keys of a record, bare or wrapped, in any pieces', () => {
    const text = JSON.stringify(page, null, 1)
    for (const size of [1, 2, 3, 7, 64, text.length]) {
      const parsed = JSON.parse(strip(text, size))
      expect(parsed[0]).toEqual({ ...page[0], data: null })
      expect(parsed[1]).toEqual({ attachment: { uuid: 'b', data: null, size: 3 } })
      // Not a string: left for parseRecord to drop.
      expect(parsed[2]).toEqual(page[2])
    }
  })

  it('leaves a text without those keys as it came', () => {
    const text = JSON.stringify([
      { id: 1, name: 'data', tags: ['data'] },
      { id: 2, other: 'x' },
    ])
    expect(strip(text, 5)).toBe(text)
    expect(strip(text, 5, [])).toBe(text)
  })

  it('reads a response chunk by chunk, multi-byte characters split between chunks', async () => {
    const text = JSON.stringify([{ uuid: 'ä€', data: 'A'.repeat(1000), name: 'Müller 😀' }])
    const bytes = new TextEncoder().encode(text)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 5) controller.enqueue(bytes.slice(at, at + 5))
        controller.close()
      },
    })
    expect(JSON.parse(await readWithout(new Response(stream), ['data']))).toEqual([
      { uuid: 'ä€', data: null, name: 'Müller 😀' },
    ])
  })

  it('frees each chunk it has read at once, but not a buffer the chunk is only part of', async () => {
    const text = new TextEncoder().encode(JSON.stringify([{ id: 1, data: 'QUJD' }]))
    const own = text.slice(0, 10)
    const shared = new Uint8Array(text.length + 8)
    shared.set(text.subarray(10), 4)
    const part = shared.subarray(4, 4 + text.length - 10)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(own)
        controller.enqueue(part)
        controller.close()
      },
    })
    expect(JSON.parse(await readWithout(new Response(stream), ['data']))).toEqual([{ id: 1, data: null }])
    // Detached: its memory is given back now, not at V8's next collection.
    expect(own.buffer.byteLength).toBe(0)
    expect(shared.buffer.byteLength).toBe(text.length + 8)
  })
})
