// The data dictionary covers the resource table: every table and column described, the engine columns
// once for all, and a live view per table.
import { describe, expect, it } from 'vitest'
import { liveViews, mirrorTables, RESERVED_WORD_ALIASES } from '../../src/resources/dictionary/index.ts'
import { CHILD_ENGINE_COLUMNS, MAIN_ENGINE_COLUMNS } from '../../src/resources/dictionary/types.ts'
import { childTables, resources } from '../../src/resources/index.ts'

const named = (name: string) => mirrorTables.find((table) => table.name === name)

describe('the data dictionary', () => {
  it('has every main table, child table and member table of the resource table, each once', () => {
    const members = resources.flatMap((resource) =>
      'members' in resource && resource.members ? [resource.members.table] : [],
    )
    expect(mirrorTables.map((table) => table.name)).toEqual([
      ...resources.map((resource) => resource.name),
      ...childTables.map((child) => child.table),
      ...members,
    ])
    expect(members).toEqual(['crm.filter_group_members'])
  })

  it.each(mirrorTables.map((table) => [table.name, table] as const))(
    '%s: a description of the table and of every column, each column once',
    (_name, table) => {
      expect(table.description.trim().length).toBeGreaterThan(10)
      const blank = table.columns.filter((column) => column.description.trim() === '').map((c) => c.name)
      expect(blank).toEqual([])
      const names = table.columns.map((column) => column.name)
      expect(new Set(names).size).toBe(names.length)
    },
  )

  it('lists the columns of the resource table with their types, then the engine columns', () => {
    for (const resource of resources) {
      const table = named(resource.name)
      const fields = Object.entries(resource.columns).map(([name, column]) => [name, column.type])
      const engine = MAIN_ENGINE_COLUMNS.map((column) => [column.name, column.type])
      expect(table?.columns.map((column) => [column.name, column.type])).toEqual([...fields, ...engine])
    }
    for (const child of childTables) {
      const table = named(child.table)
      const fields = Object.entries(child.columns).map(([name, column]) => [name, column.type])
      const engine = CHILD_ENGINE_COLUMNS.map((column) => [column.name, column.type])
      expect(table?.columns.map((column) => [column.name, column.type])).toEqual([...fields, ...engine])
    }
  })

  it('describes each engine column once: every table that has it says the same', () => {
    const texts = new Map<string, Set<string>>()
    for (const table of mirrorTables.filter((t) => t.kind !== 'members')) {
      for (const column of table.columns.filter((c) => c.name.startsWith('_'))) {
        const key = `${table.kind}.${column.name}`
        texts.set(key, (texts.get(key) ?? new Set()).add(column.description))
      }
    }
    expect([...texts.keys()].sort()).toEqual(
      [
        ...MAIN_ENGINE_COLUMNS.map((column) => `main.${column.name}`),
        ...CHILD_ENGINE_COLUMNS.map((column) => `child.${column.name}`),
      ].sort(),
    )
    for (const [key, descriptions] of texts) expect(descriptions.size, key).toBe(1)
  })

  it('names the parents of every child table as the resource table maps them', () => {
    expect(named('crm.tags')?.parents.map((parent) => parent.resource)).toEqual([
      'crm.people',
      'crm.companies',
      'crm.deals',
      'crm.projects',
    ])
    expect(named('crm.connections')?.parents.map((parent) => parent.resource)).toEqual([
      'crm.people',
      'crm.companies',
    ])
    expect(named('crm.note_links')?.parents).toEqual([
      { resource: 'crm.notes', column: '_parent_id', byResource: true },
    ])
    expect(named('reservations.contact_tags')?.parents.map((parent) => parent.resource)).toEqual([
      'reservations.contacts',
    ])
    expect(named('crm.filter_group_members')?.parents).toEqual([
      { resource: 'crm.filter_groups', column: 'filter_group_id', byResource: false },
    ])
    for (const table of mirrorTables) expect(table.parents.length > 0, table.name).toBe(table.kind !== 'main')
  })
})

describe('the live views', () => {
  it('are one per table, in schema <schema>_live under the same name, without _deleted_at', () => {
    expect(liveViews.map((view) => `${view.schema}.${view.name}`)).toEqual(
      mirrorTables.map((table) => `${table.schema}_live.${table.table}`),
    )
    for (const view of liveViews) {
      const own = view.columns.filter((column) => !column.aliasOf).map((column) => column.name)
      expect(own).toEqual(
        view.of.columns.map((column) => column.name).filter((name) => name !== '_deleted_at'),
      )
      expect(view.description).toContain(view.of.description)
    }
  })

  it('repeat each column named with a reserved word under its safe name, right after it', () => {
    const people = liveViews.find((view) => view.schema === 'crm_live' && view.name === 'people')
    const names = people?.columns.map((column) => column.name) ?? []
    expect(names[names.indexOf('user') + 1]).toBe('responsible_user')
    for (const view of liveViews) {
      for (const [index, column] of view.columns.entries()) {
        if (column.name in RESERVED_WORD_ALIASES) {
          expect(view.columns[index + 1], `${view.name}.${column.name}`).toMatchObject({
            name: RESERVED_WORD_ALIASES[column.name],
            type: column.type,
            aliasOf: column.name,
          })
        }
      }
    }
  })
})
