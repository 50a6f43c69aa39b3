// `crm-sync schema --dbt|--markdown [--output FILE]`: the mirror's dbt sources, or the column reference
// of docs/mirror.md, from the data dictionary (src/resources/dictionary). With accounts (--accounts, or
// the names in ACCOUNTS_FILE), the sources of each account and the union models over them. It needs no
// configuration and no database (of ACCOUNTS_FILE, the names only): main.ts runs it before reading the
// configuration.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ACCOUNT_NAME, readAccountNames } from '../config/accounts.ts'
import { readEnvironment } from '../config/index.ts'
import { dbtSources } from '../resources/dictionary/dbt.ts'
import { MODEL_HEADER, unionModelProperties, unionModels } from '../resources/dictionary/dbt-union.ts'
import { historyViews } from '../resources/dictionary/history.ts'
import { liveViews, mirrorTables } from '../resources/dictionary/index.ts'
import { markdownReference, replaceGeneratedPart } from '../resources/dictionary/markdown.ts'
import { type Command, EXIT, type OptionValues } from './command.ts'

const USAGE = `Usage: crm-sync schema --dbt [--accounts <names>] [--output <file|dir>]
       crm-sync schema --markdown [--output <file>]

Prints the mirror as dbt sources (a sources.yml, version 2), from crm-sync's data dictionary: sources
crm and reservations with every table and column, their types and descriptions, sources crm_live
and reservations_live with the views of the live rows, and source history with a view per main table
of every version of its records. The same descriptions are the comments on the
tables and views in the database. With --markdown, prints instead the per-table column reference of
docs/mirror.md, from the same descriptions. Needs no configuration and no database.

With several accounts (--accounts, or else the account names in ACCOUNTS_FILE; no key is read): the
five sources of each account, named as its schemas (crm_north, reservations_north, crm_north_live,
reservations_north_live, history_north), and a dbt model per mirror table (crm__people, ...) that
unions the table of every account, with a column source_relation naming the row's account. With
--output <dir>, writes <dir>/sources.yml, <dir>/models/<model>.sql and <dir>/models/schema.yml (the
models' columns); without it, prints the sources only.

Options:
  --dbt               the dbt sources
  --accounts <names>  --dbt: the accounts, comma-separated (--accounts north,south); without it, those
                      of ACCOUNTS_FILE if it is set (in the environment or .env), else none
  --markdown          the column reference of docs/mirror.md (its generated part, markers included)
  --output <path>     --dbt: write them to <file> instead of stdout, with accounts into <dir>;
                      --markdown: replace the generated part of <file> in place
                      (npm run cli -- schema --markdown --output docs/mirror.md)`

const NAME_RULE = 'a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"'

type Accounts = { names: string[]; from: string } | { problems: string[] }

/** The accounts of `--dbt`: --accounts, or ACCOUNTS_FILE's names (sorted: the same files either way). */
function dbtAccounts(values: OptionValues): Accounts {
  if (typeof values.accounts === 'string') {
    const names = values.accounts.split(',').map((item) => item.trim())
    const wrong = names.filter((item) => !ACCOUNT_NAME.test(item))
    const twice = names.filter((item, index) => names.indexOf(item) !== index)
    return wrong.length > 0 || twice.length > 0
      ? {
          problems: [
            ...wrong.map(
              (item) => `--accounts: ${JSON.stringify(item)} is not an account name (${NAME_RULE})`,
            ),
            ...[...new Set(twice)].map((item) => `--accounts: ${item} is named twice`),
          ],
        }
      : { names: names.sort(), from: '' }
  }
  const file = readEnvironment().ACCOUNTS_FILE
  if (!file) return { names: [], from: '' }
  const { names, problems } = readAccountNames(file)
  return problems.length > 0 ? { problems } : { names: names.sort(), from: ` (ACCOUNTS_FILE ${file})` }
}

async function writeMarkdown(output: string): Promise<string> {
  const replaced = replaceGeneratedPart(await readFile(output, 'utf8'), markdownReference())
  if (replaced === null) throw new Error(`${output} has no generated part (its markers are missing)`)
  await writeFile(output, replaced)
  return `wrote the columns of ${mirrorTables.length} tables into ${output}`
}

/** Writes `<dir>/sources.yml` and the union models, and removes model files of an earlier crm-sync. */
async function writeProject(dir: string, accounts: readonly string[]): Promise<string> {
  const folder = join(dir, 'models')
  await mkdir(folder, { recursive: true })
  await writeFile(join(dir, 'sources.yml'), dbtSources(accounts))
  const models = unionModels(accounts)
  for (const model of models) await writeFile(join(folder, `${model.name}.sql`), model.sql)
  await writeFile(join(folder, 'schema.yml'), unionModelProperties(accounts))
  // A table an upgrade removed: its model (a file starting with the header) would name a missing source.
  const current = new Set(models.map((model) => `${model.name}.sql`))
  for (const file of await readdir(folder)) {
    if (!file.endsWith('.sql') || current.has(file)) continue
    const text = await readFile(join(folder, file), 'utf8')
    if (text.startsWith(`${MODEL_HEADER}\n`)) await rm(join(folder, file))
  }
  return (
    `wrote the dbt sources of accounts ${accounts.join(', ')} to ${join(dir, 'sources.yml')}, and ` +
    `${models.length} union models with source_relation to ${folder}`
  )
}

function usage(problems: string[]): number {
  console.error(`${problems.map((problem) => `crm-sync schema: ${problem}`).join('\n')}\n\n${USAGE}`)
  return EXIT.usage
}

async function runDbt(values: OptionValues, output: string | undefined): Promise<number> {
  if (values.account !== undefined)
    return usage(['--account is for the commands of one account: name the accounts with --accounts'])
  const accounts = dbtAccounts(values)
  if ('problems' in accounts) return usage(accounts.problems)
  const { names, from } = accounts
  if (names.length > 0 && output !== undefined && /\.ya?ml$/i.test(output))
    return usage([`with accounts, --output names a directory (for sources.yml and models/), not ${output}`])
  try {
    if (output === undefined) {
      process.stdout.write(dbtSources(names))
      if (names.length > 0)
        console.error(
          `crm-sync schema: printed the sources of accounts ${names.join(', ')}${from}; ` +
            '--output <dir> writes them with the union models',
        )
    } else if (names.length > 0) {
      console.error(await writeProject(output, names))
    } else {
      await writeFile(output, dbtSources())
      console.error(
        `wrote ${mirrorTables.length} tables, ${liveViews.length} live views and ${historyViews.length} history views as dbt sources to ${output}`,
      )
    }
  } catch (error) {
    console.error(`crm-sync schema: failed: ${(error as Error).message}`)
    return EXIT.failed
  }
  return EXIT.ok
}

/** Runs the command from its parsed command line (no configuration needed). */
export async function runSchema(parsed: { values: OptionValues; positionals: string[] }): Promise<number> {
  const { values, positionals } = parsed
  const formats = (['dbt', 'markdown'] as const).filter((format) => values[format] === true)
  const [format] = formats
  if (positionals.length > 0 || format === undefined || formats.length > 1) {
    const problem =
      positionals.length > 0
        ? `unexpected argument "${positionals[0]}"`
        : 'say which format: --dbt or --markdown (one of them)'
    console.error(`crm-sync schema: ${problem}\n\n${USAGE}`)
    return EXIT.usage
  }
  const output = typeof values.output === 'string' ? values.output : undefined
  if (format === 'dbt') return runDbt(values, output)
  if (values.accounts !== undefined) return usage(['--accounts is for --dbt'])
  if (output === undefined) {
    process.stdout.write(markdownReference())
    return EXIT.ok
  }
  try {
    console.error(await writeMarkdown(output))
  } catch (error) {
    console.error(`crm-sync schema: failed: ${(error as Error).message}`)
    return EXIT.failed
  }
  return EXIT.ok
}

export const schemaCommand: Command = {
  name: 'schema',
  summary: 'print the mirror as dbt sources (sources.yml), or the column reference of docs/mirror.md',
  usage: USAGE,
  options: {
    dbt: { type: 'boolean' },
    accounts: { type: 'string' },
    markdown: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
  },
  run: ({ values, positionals }) => runSchema({ values, positionals }),
}
