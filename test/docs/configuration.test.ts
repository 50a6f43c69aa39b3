// The documentation against the code. The README's configuration table is the operators' reference:
// it must name every variable the configuration schema reads, and no other. The variable names come
// from the schema object itself, not from a list kept here: `z.object` is wrapped while src/config is
// imported, so the shape the environment schema was built from is captured (an exported schema with
// a `shape` is used as well, should src/config ever export one). And every relative link of the
// README and of docs/*.md must point to a file that exists (and, into a Markdown file, to a heading
// it has).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'

const shapes = vi.hoisted(() => [] as object[])

vi.mock('zod', async (importOriginal) => {
  const actual = await importOriginal<typeof import('zod')>()
  const object: typeof actual.z.object = (shape, params) => {
    if (shape) shapes.push(shape)
    return actual.z.object(shape, params)
  }
  return { ...actual, z: { ...actual.z, object } }
})

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const README = join(ROOT, 'README.md')
/** A variable every version of the environment schema reads: it tells that schema from the others. */
const MARKER = 'CRM_BASE_URL'

/** The names of the environment variables the configuration schema reads. */
async function schemaVariables(): Promise<string[]> {
  const module: Record<string, unknown> = await import('../../src/config/index.ts')
  const exported = Object.values(module)
    .map((value) => (value as { shape?: unknown } | null)?.shape)
    .filter((shape): shape is object => typeof shape === 'object' && shape !== null)
  const candidates = [...exported, ...shapes].filter((shape) => MARKER in shape)
  if (candidates.length === 0) throw new Error(`no zod object schema with ${MARKER} found in src/config`)
  return [...new Set(candidates.flatMap((shape) => Object.keys(shape)))].sort()
}

/** The text of the section under `## <title>`, up to the next heading of that level. */
function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`)
  if (start < 0) throw new Error(`README.md has no section "## ${title}"`)
  const end = markdown.indexOf('\n## ', start + 1)
  return markdown.slice(start, end < 0 ? undefined : end)
}

/** Every variable named (in backticks) in the first cell of the section's table rows. */
function documentedVariables(): string[] {
  const rows = section(readFileSync(README, 'utf8'), 'Configuration')
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2) // the header and its separator
  const names = rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)])
  return names.map((match) => match[1] as string)
}

describe("the README's configuration table", () => {
  it('documents every variable the configuration schema reads', async () => {
    const documented = new Set(documentedVariables())
    const missing = (await schemaVariables()).filter((name) => !documented.has(name))
    expect(missing, 'variables of src/config missing from the README configuration table').toEqual([])
  })

  it('documents no variable the configuration schema does not read', async () => {
    const read = new Set(await schemaVariables())
    const unknown = documentedVariables().filter((name) => !read.has(name))
    expect(unknown, 'variables in the README configuration table that src/config does not read').toEqual([])
  })

  it('names each variable once', () => {
    const names = documentedVariables()
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([])
  })
})

// ---- links ------------------------------------------------------------------------------------

function markdownFiles(): string[] {
  const docs = join(ROOT, 'docs')
  const inDocs = existsSync(docs)
    ? readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .map((name) => join(docs, name))
    : []
  return [README, ...inDocs]
}

/** The text without fenced code blocks and inline code, where brackets are no links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces as "-"). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  const headings = markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .split('\n')
    .filter((line) => /^#{1,6}\s/.test(line))
  for (const heading of headings) {
    const slug = heading
      .replace(/^#{1,6}\s+/, '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return result
}

interface Link {
  file: string
  target: string
}

function relativeLinks(file: string): Link[] {
  const links = [...prose(readFileSync(file, 'utf8')).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
  return links
    .map((match) => match[1] as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target)) // http:, https:, mailto:
    .map((target) => ({ file, target }))
}

/** Why the link is broken, or null. */
function brokenBecause({ file, target }: Link): string | null {
  const [path = '', anchor] = target.split('#')
  const resolved = path ? resolve(dirname(file), decodeURIComponent(path)) : file
  if (!existsSync(resolved)) return 'no such file'
  if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) return null
  return anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor).toLowerCase())
    ? null
    : `no heading #${anchor}`
}

describe('the documentation', () => {
  it('has relative links in README.md and docs/*.md that point to existing files and headings', () => {
    const links = markdownFiles().flatMap(relativeLinks)
    expect(links.length).toBeGreaterThan(0)
    const broken = links
      .map((link) => ({ link, reason: brokenBecause(link) }))
      .filter(({ reason }) => reason !== null)
      .map(({ link, reason }) => `${relative(ROOT, link.file)}: ${link.target} (${reason})`)
    expect(broken).toEqual([])
  })
})
