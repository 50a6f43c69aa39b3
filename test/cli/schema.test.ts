// `crm-sync schema --dbt`: the mirror as dbt sources, read back with a YAML parser, without any
// configuration or database; with accounts (--accounts, ACCOUNTS_FILE), the sources of each account and
// the union models with source_relation.
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { dbtSources } from '../../src/resources/dictionary/dbt.ts'
import { MODEL_HEADER, unionModels } from '../../src/resources/dictionary/dbt-union.ts'
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

// The output of `crm-sync schema --dbt` before accounts were added to it (commit a270453): without
// accounts it stays byte for byte what it was. A change of the data dictionary changes it: compare the
// output with that commit's, then update both.
const SOURCES_BEFORE_ACCOUNTS = {
  bytes: 185_273,
  sha256: '2bba71156fab5180146ebbd3f941cd5f0129ed6b34fdb8bf26375bdf7739ed88',
}
const KINDS = ['crm', 'reservations', 'crm_live', 'reservations_live', 'history'] as const
const accountSourceNames = (account: string) => [
  `crm_${account}`,
  `reservations_${account}`,
  `crm_${account}_live`,
  `reservations_${account}_live`,
  `history_${account}`,
]
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

describe('crm-sync schema --dbt with accounts', () => {
  it('without accounts, prints exactly what it printed before accounts, and writes nothing on stderr', async () => {
    // ACCOUNTS_FILE set but empty counts as unset, as in the configuration.
    for (const env of [{}, { ACCOUNTS_FILE: '' }] as Record<string, string>[]) {
      const { code, stdout, stderr } = await cli(['schema', '--dbt'], env, cwd)
      expect(code).toBe(0)
      expect(stderr).toBe('')
      expect(Buffer.byteLength(stdout)).toBe(SOURCES_BEFORE_ACCOUNTS.bytes)
      expect(sha256(stdout)).toBe(SOURCES_BEFORE_ACCOUNTS.sha256)
    }
    expect(dbtSources([])).toBe(dbtSources())
  })

  it('--accounts north,south --output <dir>: five sources per account, a union model per table', async () => {
    const dir = join(cwd, 'project')
    const { code, stdout, stderr } = await cli(
      ['schema', '--dbt', '--accounts', 'south,north', '--output', dir],
      {},
      cwd,
    )
    expect(code).toBe(0)
    expect(stdout).toBe('')
    expect(stderr).toMatch(
      /^wrote the dbt sources of accounts north, south to .*sources\.yml, and 28 union models/,
    )

    // Each account's sources are named as its schemas, and hold what the source of their kind holds.
    const today = (parse(dbtSources()) as { sources: Source[] }).sources
    const document = parse(await readFile(join(dir, 'sources.yml'), 'utf8')) as {
      version: number
      sources: Source[]
    }
    expect(document.version).toBe(2)
    expect(document.sources.map((source) => source.name)).toEqual([
      ...accountSourceNames('north'),
      ...accountSourceNames('south'),
    ])
    for (const account of ['north', 'south']) {
      for (const [index, sourceName] of accountSourceNames(account).entries()) {
        const source = sourceNamed(document.sources, sourceName)
        const kind = sourceNamed(today, KINDS[index] as string)
        expect(source?.schema).toBe(sourceName)
        expect(source?.tables, sourceName).toEqual(kind?.tables)
        expect(source?.description).toBe(`Account ${account}. ${kind?.description}`)
      }
    }

    // A model per mirror table, and their properties.
    const files = (await readdir(join(dir, 'models'))).sort()
    expect(files).toEqual(
      [...mirrorTables.map((table) => `${table.schema}__${table.table}.sql`), 'schema.yml'].sort(),
    )
    const people = await readFile(join(dir, 'models', 'crm__people.sql'), 'utf8')
    expect(people.startsWith(`${MODEL_HEADER}\n`)).toBe(true)
    const [north, south, ...more] = people.split('\nunion all\n')
    expect(more).toEqual([])
    expect(north).toMatch(/\nselect\n {2}'north' as source_relation,\n {2}id,\n/)
    expect(north?.endsWith(`\nfrom {{ source('crm_north', 'people') }}`)).toBe(true)
    expect(south).toMatch(/^select\n {2}'south' as source_relation,\n {2}id,\n/)
    expect(south?.endsWith(`\nfrom {{ source('crm_south', 'people') }}\n`)).toBe(true)
    expect(people).toContain(`  {{ adapter.quote('user') }},\n`)
    const properties = parse(await readFile(join(dir, 'models', 'schema.yml'), 'utf8')) as {
      models: { name: string; description: string; columns: Column[] }[]
    }
    expect(properties.models.map((model) => model.name)).toEqual(
      mirrorTables.map((table) => `${table.schema}__${table.table}`),
    )
    for (const table of mirrorTables) {
      const model = properties.models.find((m) => m.name === `${table.schema}__${table.table}`)
      expect(model?.description).toContain(table.description)
      expect(model?.columns.map((c) => c.name)).toEqual([
        'source_relation',
        ...table.columns.map((c) => c.name),
      ])
    }
    const relation = properties.models[0]?.columns[0]
    expect(relation).toEqual({
      name: 'source_relation',
      data_type: 'text',
      description: expect.stringContaining('north, south'),
    })

    // Written again, a model of a table crm-sync no longer has goes (its header says it is crm-sync's);
    // a file of someone else's stays. The files are the same at each run.
    await writeFile(join(dir, 'models', 'crm__gone.sql'), `${MODEL_HEADER}\nselect 1\n`)
    await writeFile(join(dir, 'models', 'mine.sql'), 'select 1\n')
    const again = await cli(['schema', '--dbt', '--accounts', 'north,south', '--output', dir], {}, cwd)
    expect(again.code).toBe(0)
    const after = (await readdir(join(dir, 'models'))).sort()
    expect(after).toEqual([...files, 'mine.sql'].sort())
    expect(await readFile(join(dir, 'models', 'crm__people.sql'), 'utf8')).toBe(people)
  })

  it('--accounts without --output prints the sources only, and says so', async () => {
    const { code, stdout, stderr } = await cli(['schema', '--dbt', '--accounts', 'north,south'], {}, cwd)
    expect(code).toBe(0)
    expect(stdout).toBe(dbtSources(['north', 'south']))
    expect(stderr).toBe(
      'crm-sync schema: printed the sources of accounts north, south; --output <dir> writes them with the union models\n',
    )
  })

  it("takes the names of ACCOUNTS_FILE (or .env's) without their keys, and --accounts over them", async () => {
    const file = join(cwd, 'accounts.yaml')
    // The keys' variables are not set, and a key file does not exist: only the names are read.
    await writeFile(
      file,
      [
        'accounts:',
        '  south:',
        '    crm: { base_url: https://south.example.com, api_key_env: SOUTH_CRM_KEY }',
        '    webhook_secret_env: SOUTH_WEBHOOK_SECRET',
        '  north:',
        '    crm: { base_url: https://north.example.com, api_key_file: /nonexistent/north_key }',
        '',
      ].join('\n'),
    )
    const dir = join(cwd, 'from-file')
    const written = await cli(['schema', '--dbt', '--output', dir], { ACCOUNTS_FILE: file }, cwd)
    expect(written.stderr).toMatch(/^wrote the dbt sources of accounts north, south to /)
    expect(written.code).toBe(0)
    expect(await readFile(join(dir, 'sources.yml'), 'utf8')).toBe(dbtSources(['north', 'south']))
    expect(await readFile(join(dir, 'models', 'crm__people.sql'), 'utf8')).toBe(
      unionModels(['north', 'south']).find((model) => model.name === 'crm__people')?.sql,
    )

    const printed = await cli(['schema', '--dbt'], { ACCOUNTS_FILE: file }, cwd)
    expect(printed.code).toBe(0)
    expect(printed.stdout).toBe(dbtSources(['north', 'south']))
    expect(printed.stderr).toContain(`accounts north, south (ACCOUNTS_FILE ${file})`)

    const named = await cli(['schema', '--dbt', '--accounts', 'east'], { ACCOUNTS_FILE: file }, cwd)
    expect(named.stdout).toBe(dbtSources(['east']))

    const elsewhere = await workdir()
    await writeFile(join(elsewhere, '.env'), `ACCOUNTS_FILE=${file}\n`)
    const fromDotenv = await cli(['schema', '--dbt'], {}, elsewhere)
    expect(fromDotenv.code).toBe(0)
    expect(fromDotenv.stdout).toBe(dbtSources(['north', 'south']))
  })

  it('exits 2 naming a bad account name, of --accounts or of ACCOUNTS_FILE, and writes nothing', async () => {
    const { code, stdout, stderr } = await cli(
      ['schema', '--dbt', '--accounts', 'north,North,,2nd,south,south'],
      {},
      cwd,
    )
    expect(code).toBe(2)
    expect(stdout).toBe('')
    for (const named of [
      '"North" is not an account name',
      '"" is not an account name',
      '"2nd" is not an account name',
      'south is named twice',
    ])
      expect(stderr).toContain(`crm-sync schema: --accounts: ${named}`)
    expect(stderr).not.toContain('"north"')
    const file = join(cwd, 'bad-accounts.yaml')
    await writeFile(file, 'accounts:\n  North-East:\n    crm: { base_url: https://x.example.com }\n')
    const fromFile = await cli(['schema', '--dbt'], { ACCOUNTS_FILE: file }, cwd)
    expect(fromFile.code).toBe(2)
    expect(fromFile.stdout).toBe('')
    expect(fromFile.stderr).toContain(`ACCOUNTS_FILE accounts.North-East: an account name must be`)
    const missing = await cli(['schema', '--dbt'], { ACCOUNTS_FILE: join(cwd, 'none.yaml') }, cwd)
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('none.yaml does not exist')

    const dir = join(cwd, 'refused')
    await mkdir(dir)
    for (const args of [
      ['--accounts', 'north', '--output', join(dir, 'sources.yml')],
      ['--account', 'north', '--output', dir],
      ['--accounts', 'north', '--markdown', '--output', dir],
    ]) {
      const refused = await cli(
        ['schema', ...(args.includes('--markdown') ? [] : ['--dbt']), ...args],
        {},
        cwd,
      )
      expect(refused.code, args.join(' ')).toBe(2)
    }
    expect(await readdir(dir)).toEqual([])
  })
})
