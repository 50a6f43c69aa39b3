// The shape of the engine's code: src/ imports nothing outside itself (the simulator and the demo are
// tools of their own, not in the image), has no import cycles, and no file grows past 400 lines
// (past 300, it is named).
// The simulator (sandbox/) has no import cycles either: its kinds form layers below their tables.
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SRC = join(ROOT, 'src')
const SANDBOX = join(ROOT, 'sandbox')

async function sourceFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

/** The relative imports of a file (static, type-only and dynamic), resolved to absolute paths. */
function relativeImports(file: string, text: string): string[] {
  const found = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)]
  return found.map((match) => resolve(dirname(file), match[1] as string))
}

/** The relative imports of every file of a folder (default src/). */
async function importGraph(folder = SRC): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>()
  for (const file of await sourceFiles(folder)) {
    graph.set(file, relativeImports(file, await readFile(file, 'utf8')))
  }
  return graph
}

/** Every cycle's files, found by a depth-first walk (one cycle per back edge). */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(path.slice(path.indexOf(next)).map((f) => relative(ROOT, f)))
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return found
}

describe('the engine (src/)', () => {
  it('imports nothing from outside src/ and bin/: not the sandbox, the demo, tests or benchmarks', async () => {
    const outside: string[] = []
    for (const [file, imports] of await importGraph()) {
      for (const target of imports) {
        if (!target.startsWith(`${SRC}/`) && !target.startsWith(join(ROOT, 'bin/')))
          outside.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`)
      }
    }
    expect(outside).toEqual([])
  })

  it('has no import cycles', async () => {
    expect(cycles(await importGraph())).toEqual([])
  })

  // Past 300 lines a file is named in the test's output, to be split by role when a change touches
  // it; past 400 the test fails, so no file grows without bound while waiting for that split.
  it('names files over 300 lines and has none over 400', async () => {
    const long: string[] = []
    const tooLong: string[] = []
    for (const file of await sourceFiles(SRC)) {
      const lines = (await readFile(file, 'utf8')).split('\n').length
      if (lines > 300) long.push(`${relative(ROOT, file)}: ${lines}`)
      if (lines > 400) tooLong.push(`${relative(ROOT, file)}: ${lines}`)
    }
    if (long.length > 0) console.warn(`files over 300 lines (split by role): ${long.join(', ')}`)
    expect(tooLong).toEqual([])
  })
})

describe('the simulator (sandbox/)', () => {
  it('has no import cycles', async () => {
    expect(cycles(await importGraph(SANDBOX))).toEqual([])
  })
})

describe('the cycle finder', () => {
  it('finds a cycle of two files and none in a chain', () => {
    const a = join(ROOT, 'a.ts')
    const b = join(ROOT, 'b.ts')
    const c = join(ROOT, 'c.ts')
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts']])
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, []],
        ]),
      ),
    ).toEqual([])
  })
})
