// `crm-sync schema --dbt`: the mirror as dbt sources, read back with a YAML parser, without any
// configuration or database.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { liveViews, mirrorTables } from '../../src/resources/dictionary/index.ts'
import { MARKDOWN_BEGIN, MARKDOWN_END, markdownReference } from '../../src/resources/dictionary/markdown.ts'
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
      'history',
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
    // The includes of people and companies that are no arrays of known items: their avatar (a column),
    // their connections (a child table), also in the live views.
    for (const source of ['crm', 'crm_live']) {
      const tables = sourceNamed(document.sources, source)?.tables ?? []
      expect(tables.find((t) => t.name === 'connections')?.columns.map((c) => c.name)).toEqual(
        expect.arrayContaining(['id', '_parent_resource', '_parent_id', '_ordinal', '_raw']),
      )
      for (const parent of ['people', 'companies'])
        expect(tables.find((t) => t.name === parent)?.columns).toContainEqual(
          expect.objectContaining({ name: 'avatar', data_type: 'jsonb' }),
        )
    }
    const people = sourceNamed(document.sources, 'crm_live')?.tables.find((t) => t.name === 'people')
    const names = people?.columns.map((column) => column.name) ?? []
    expect(names.slice(names.indexOf('user'), names.indexOf('user') + 2)).toEqual([
      'user',
      'responsible_user',
    ])
    expect(names).not.toContain('_deleted_at')

    // History: a view per main table, its columns those of the table and the three history adds.
    const history = sourceNamed(document.sources, 'history')?.tables ?? []
    const main = mirrorTables.filter((table) => table.kind === 'main')
    expect(history.map((table) => table.name)).toEqual(main.map((table) => `${table.schema}_${table.table}`))
    const versions = history.find((table) => table.name === 'crm_people')
    expect(versions?.columns.map((column) => column.name)).toEqual([
      ...(main.find((table) => table.name === 'crm.people')?.columns.map((column) => column.name) ?? []),
      '_valid_from',
      '_valid_to',
      '_deleted',
    ])
    expect(versions?.columns.find((column) => column.name === 'user')?.quote).toBe(true)
    expect(versions?.columns.find((column) => column.name === '_synced_at')?.description).toBe(
      'When crm-sync wrote this version.',
    )
  })

  it('writes the file that --output names, and prints nothing on stdout', async () => {
    const file = join(cwd, 'sources.yml')
    const { code, stdout, stderr } = await cli(['schema', '--dbt', '--output', file], {}, cwd)
    expect(code).toBe(0)
    expect(stdout).toBe('')
    expect(stderr).toMatch(
      /^wrote 28 tables, 28 live views and 15 history views as dbt sources to .*sources\.yml\n$/,
    )
    const printed = await cli(['schema', '--dbt'], {}, cwd)
    expect(await readFile(file, 'utf8')).toBe(printed.stdout)
  })

  it('--markdown prints the column reference, and --output rewrites only that part of the file', async () => {
    const printed = await cli(['schema', '--markdown'], {}, cwd)
    expect(printed.code).toBe(0)
    expect(printed.stdout).toBe(markdownReference())
    const file = join(cwd, 'mirror.md')
    await writeFile(file, `# intro\n\n${MARKDOWN_BEGIN}\nold\n${MARKDOWN_END}\n\n## after\n`)
    const written = await cli(['schema', '--markdown', '--output', file], {}, cwd)
    expect(written.code).toBe(0)
    expect(written.stdout).toBe('')
    expect(await readFile(file, 'utf8')).toBe(`# intro\n\n${markdownReference()}\n## after\n`)
    await writeFile(file, '# no markers\n')
    const refused = await cli(['schema', '--markdown', '--output', file], {}, cwd)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('has no generated part')
    expect((await cli(['schema', '--markdown', '--dbt'], {}, cwd)).code).toBe(2)
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
