// `crm-sync schema --dbt`: the mirror as dbt sources, read back with a YAML parser, without any
// configuration or database.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { liveViews, mirrorTables } from '../../src/resources/dictionary/index.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

interface Column {
  name: string
  description: string
  data_type: string
  quote?: boolean
}
interface Source {
  name: string
  schema: string
  description: string
  tables: { name: string; description: string; columns: Column[] }[]
}

let cwd: string
beforeAll(async () => {
  cwd = await workdir()
})
afterAll(removeWorkdirs)

const sourceNamed = (sources: Source[], name: string) => sources.find((source) => source.name === name)

describe('crm-sync schema --dbt', () => {
  it('prints valid YAML: sources crm and reservations, each table and column, the live views', async () => {
    const { code, stdout, stderr } = await cli(['schema', '--dbt'], {}, cwd)
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const document = parse(stdout) as { version: number; sources: Source[] }
    expect(document.version).toBe(2)
    expect(document.sources.map((source) => source.name)).toEqual([
      'crm',
      'reservations',
      'crm_live',
      'reservations_live',
    ])
    for (const source of document.sources) {
      expect(source.schema).toBe(source.name)
      expect(source.description).toBeTruthy()
    }

    for (const table of mirrorTables) {
      const listed = sourceNamed(document.sources, table.schema)?.tables.find((t) => t.name === table.table)
      expect(listed?.description, table.name).toBe(table.description)
      expect(listed?.columns, table.name).toEqual(
        table.columns.map((column) => ({
          name: column.name,
          description: column.description,
          data_type: column.type,
          ...(['user', 'primary'].includes(column.name) ? { quote: true } : {}),
        })),
      )
    }
    expect(sourceNamed(document.sources, 'crm')?.tables).toHaveLength(
      mirrorTables.filter((table) => table.schema === 'crm').length,
    )
    expect(sourceNamed(document.sources, 'reservations')?.tables.map((t) => t.name)).toEqual([
      'contacts',
      'bookings',
      'tags',
      'webforms',
      'contact_tags',
    ])

    for (const view of liveViews) {
      const listed = sourceNamed(document.sources, view.schema)?.tables.find((t) => t.name === view.name)
      expect(
        listed?.columns.map((column) => column.name),
        `${view.schema}.${view.name}`,
      ).toEqual(view.columns.map((column) => column.name))
    }
    const people = sourceNamed(document.sources, 'crm_live')?.tables.find((t) => t.name === 'people')
    const names = people?.columns.map((column) => column.name) ?? []
    expect(names.slice(names.indexOf('user'), names.indexOf('user') + 2)).toEqual([
      'user',
      'responsible_user',
    ])
    expect(names).not.toContain('_deleted_at')
  })

  it('writes the file that --output names, and prints nothing on stdout', async () => {
    const file = join(cwd, 'sources.yml')
    const { code, stdout, stderr } = await cli(['schema', '--dbt', '--output', file], {}, cwd)
    expect(code).toBe(0)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/^wrote 25 tables and 25 live views as dbt sources to .*sources\.yml\n$/)
    const printed = await cli(['schema', '--dbt'], {}, cwd)
    expect(await readFile(file, 'utf8')).toBe(printed.stdout)
  })

  it('exits 2 without --dbt, and 1 when the file cannot be written', async () => {
    const bare = await cli(['schema'], {}, cwd)
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('say which format: --dbt')
    expect(bare.stdout).toBe('')
    const unwritable = await cli(
      ['schema', '--dbt', '--output', join(cwd, 'missing', 'sources.yml')],
      {},
      cwd,
    )
    expect(unwritable.code).toBe(1)
    expect(unwritable.stderr).toMatch(/crm-sync schema: failed: ENOENT/)
  })
})
