// Reading an index answer without the values a resource discards (attachments' Base64 `data`: the
// files themselves). `response.text()` holds the whole answer, and JSON.parse a second copy of every
// file, before parseRecord drops them: pages of files of tens of kilobytes each weigh tens of
// megabytes, several of them in flight at once under latency (sweep/lookahead.ts), and the engine's
// resident memory stayed near 400 MB for the rest of a sweep after such pages. Here the answer is
// read chunk by chunk and a discarded key's string value is replaced by `null` as it streams past, so
// neither copy is ever made; parseRecord then drops the key as before. Each chunk's memory is given
// back as soon as it is read (`release`): left to V8's next collection, the chunks of four such pages
// in flight came to 40-90 MB at once (docs/performance.md).
//
// Only the keys of a record count: those of the objects in the answer's top-level array (a bare
// record) and of the objects inside those (a wrapped one, `{"attachment": {...}}`). Other values (a
// number, an object) are left as they came, for parseRecord to drop.

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
/** Object and array depths at which a record's keys sit: bare (2) or wrapped (3). */
const RECORD_DEPTHS = new Set([2, 3])
/** Longer strings are never taken for a discarded key. */
const LONGEST_KEY = 64

/** The answer's text with the string values of `keys` (at a record's level) replaced by `null`. */
export async function readWithout(response: Response, keys: readonly string[]): Promise<string> {
  if (!response.body) return ''
  const strip = discarder(keys)
  const decoder = new TextDecoder()
  const parts: string[] = []
  for await (const chunk of response.body) {
    parts.push(strip(decoder.decode(chunk, { stream: true })))
    release(chunk)
  }
  parts.push(strip(decoder.decode()))
  return parts.join('')
}

/**
 * Frees a chunk's memory now rather than at V8's next collection. A byte stream hands its reader
 * chunks whose buffers are the reader's alone (they are transferred on enqueue); transferring one to
 * an empty buffer detaches it and frees its memory at once. A chunk that is a view into part of a
 * larger buffer is left alone, and so is one that cannot be detached (it is then freed as before).
 */
function release(chunk: Uint8Array): void {
  const { buffer } = chunk
  if (!(buffer instanceof ArrayBuffer) || chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength)
    return
  try {
    buffer.transfer(0)
  } catch {
    // A buffer that may not be detached (a WebAssembly memory's, say): V8 frees it later.
  }
}

/** A stateful filter over consecutive pieces of one JSON text (see the head of this file). */
export function discarder(keys: readonly string[]): (text: string) => string {
  const discarded = new Set(keys)
  let depth = 0
  let inString = false
  let escaped = false
  // The string being read, while it may be a key (at a record's level, short): its pieces so far.
  let current: string[] | null = null
  let currentLength = 0
  // The last string closed, when it may be a key: a colon after it makes it one.
  let candidate: string | null = null
  // After a discarded key's colon: the value's opening quote starts the skip.
  let awaitingValue = false
  let skipping = false
  return (text) => {
    const out: string[] = []
    let from = 0
    let keyFrom = 0
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (inString) {
        if (escaped) escaped = false
        else if (code === BACKSLASH) escaped = true
        else if (code === QUOTE) {
          inString = false
          if (skipping) {
            skipping = false
            from = i + 1
          } else if (current && currentLength + i - keyFrom <= LONGEST_KEY) {
            current.push(text.slice(keyFrom, i))
            candidate = current.join('')
          }
          current = null
        }
        continue
      }
      if (code <= 0x20) continue // whitespace keeps what came before it
      if (code === QUOTE) {
        inString = true
        if (awaitingValue) {
          awaitingValue = false
          skipping = true
          out.push(text.slice(from, i), 'null')
          continue
        }
        candidate = null
        current = RECORD_DEPTHS.has(depth) ? [] : null
        currentLength = 0
        keyFrom = i + 1
        continue
      }
      awaitingValue = code === COLON && candidate !== null && discarded.has(candidate)
      candidate = null
      if (code === 0x7b || code === 0x5b) depth++
      else if (code === 0x7d || code === 0x5d) depth--
    }
    if (inString && current) {
      currentLength += text.length - keyFrom
      if (currentLength <= LONGEST_KEY) current.push(text.slice(keyFrom))
      else current = null
    }
    if (!skipping) out.push(text.slice(from))
    return out.join('')
  }
}
