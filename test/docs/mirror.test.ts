// docs/mirror.md, the data dictionary, against the resource table (src/resources): it names every
// resource among the names used everywhere, and has a section for every main, child and member table
// that documents each of its columns (a main table's `id` is in the engine columns above them).
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { childTables, resources } from '../../src/resources/index.ts'

const MIRROR = readFileSync(new URL('../../docs/mirror.md', import.meta.url), 'utf8')

/** The sections under `###` and `####` headings, by the tables their heading names. */
function sections(): Map<string, string> {
  const found = new Map<string, string>()
  for (const section of MIRROR.split(/^#{3,4} /m).slice(1)) {
    const heading = section.slice(0, section.indexOf('\n'))
    for (const [, table] of heading.matchAll(/`([a-z_]+\.[a-z_]+)`/g)) found.set(table as string, section)
  }
  return found
}

const quoted = (name: string) => `\`${name}\``

describe('docs/mirror.md', () => {
  it('lists every resource among the names used in the CLI, the admin API and the metrics', () => {
    const start = MIRROR.indexOf('Resource names everywhere')
    const names = MIRROR.slice(start, MIRROR.indexOf('\n## ', start))
    expect(start).toBeGreaterThan(0)
    expect(
      resources.map((resource) => resource.name).filter((name) => !names.includes(quoted(name))),
    ).toEqual([])
  })

  it('documents every column of every main, child and member table', () => {
    const bySection = sections()
    const missing: string[] = []
    const check = (table: string, columns: string[]) => {
      const section = bySection.get(table)
      if (section === undefined) missing.push(`${table}: no section`)
      else
        for (const column of columns)
          if (!section.includes(quoted(column))) missing.push(`${table}.${column}`)
    }
    for (const resource of resources) {
      check(
        resource.name,
        Object.keys(resource.columns).filter((column) => column !== 'id'),
      )
      const members = resource.members
      if (members) check(members.table, [members.groupColumn, 'member_resource', 'member_id'])
    }
    for (const child of childTables) check(child.table, Object.keys(child.columns))
    expect(missing).toEqual([])
    // The newer tables are among those checked.
    for (const table of [
      'crm.notes',
      'crm.note_links',
      'crm.filter_group_members',
      'reservations.contact_tags',
    ])
      expect(bySection.has(table), table).toBe(true)
  })
})
