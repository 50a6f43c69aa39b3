// docs/mirror.md, the data dictionary, against the resource table (src/resources): it names every
// resource among the names used everywhere, and its column reference is the one the data dictionary
// generates (`crm-sync schema --markdown`), with a section for every main, child and member table.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { mirrorTables } from '../../src/resources/dictionary/index.ts'
import {
  MARKDOWN_BEGIN,
  MARKDOWN_END,
  markdownReference,
  replaceGeneratedPart,
} from '../../src/resources/dictionary/markdown.ts'
import { resources } from '../../src/resources/index.ts'

const MIRROR = readFileSync(new URL('../../docs/mirror.md', import.meta.url), 'utf8')

const quoted = (name: string) => `\`${name}\``

/** The generated part of docs/mirror.md, markers included, or '' without them. */
function generatedPart(): string {
  const start = MIRROR.indexOf(MARKDOWN_BEGIN)
  const end = MIRROR.indexOf(MARKDOWN_END, start)
  return start < 0 || end < 0 ? '' : MIRROR.slice(start, end + MARKDOWN_END.length + 1)
}

describe('docs/mirror.md', () => {
  it('lists every resource among the names used in the CLI, the admin API and the metrics', () => {
    const start = MIRROR.indexOf('Resource names everywhere')
    const names = MIRROR.slice(start, MIRROR.indexOf('\n## ', start))
    expect(start).toBeGreaterThan(0)
    expect(
      resources.map((resource) => resource.name).filter((name) => !names.includes(quoted(name))),
    ).toEqual([])
  })

  it('has the column reference the data dictionary generates, as it is now', () => {
    expect(
      generatedPart(),
      'docs/mirror.md is not current: run `npm run cli -- schema --markdown --output docs/mirror.md`',
    ).toBe(markdownReference())
  })

  it('generates a section for every main, child and member table, with every column of its own', () => {
    const reference = markdownReference()
    const sections = reference.split(/^### /m).slice(1)
    expect(sections.map((section) => section.slice(0, section.indexOf('\n')))).toEqual(
      mirrorTables.map((table) => `Columns of ${quoted(table.name)}`),
    )
    for (const [index, table] of mirrorTables.entries()) {
      const own = table.columns.filter((column) => table.kind === 'members' || !column.name.startsWith('_'))
      for (const column of own) expect(sections[index], table.name).toContain(`| ${quoted(column.name)} |`)
      expect(sections[index]).toContain(table.description)
    }
    expect(reference).toContain('| `id` | `text` primary key | `uuid` |')
  })

  it('replaces only the generated part of a document', () => {
    const document = `intro\n\n${MARKDOWN_BEGIN}\nold\n${MARKDOWN_END}\n\n## after\n`
    expect(replaceGeneratedPart(document, markdownReference())).toBe(
      `intro\n\n${markdownReference()}\n## after\n`,
    )
    expect(replaceGeneratedPart('no markers', 'x')).toBeNull()
  })
})
