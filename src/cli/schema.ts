// `crm-sync schema --dbt|--markdown [--output FILE]`: the mirror's dbt sources, or the column reference
// of docs/mirror.md, from the data dictionary (src/resources/dictionary). It needs no configuration and
// no database: main.ts runs it before reading the configuration.
import { readFile, writeFile } from 'node:fs/promises'
import { dbtSources } from '../resources/dictionary/dbt.ts'
import { historyViews } from '../resources/dictionary/history.ts'
import { liveViews, mirrorTables } from '../resources/dictionary/index.ts'
import { markdownReference, replaceGeneratedPart } from '../resources/dictionary/markdown.ts'
import { type Command, EXIT, type OptionValues } from './command.ts'

const USAGE = `Usage: crm-sync schema --dbt [--output <file>]
       crm-sync schema --markdown [--output <file>]

Prints the mirror as dbt sources (a sources.yml, version 2), from crm-sync's data dictionary: sources
crm and reservations with every table and column, their types and descriptions, sources crm_live
and reservations_live with the views of the live rows, and source history with a view per main table
of every version of its records. The same descriptions are the comments on the
tables and views in the database. With --markdown, prints instead the per-table column reference of
docs/mirror.md, from the same descriptions. Needs no configuration and no database.

Options:
  --dbt            the dbt sources
  --markdown       the column reference of docs/mirror.md (its generated part, markers included)
  --output <file>  --dbt: write them to <file> instead of stdout; --markdown: replace the generated
                   part of <file> in place (npm run cli -- schema --markdown --output docs/mirror.md)`

async function write(format: 'dbt' | 'markdown', output: string): Promise<string> {
  if (format === 'dbt') {
    await writeFile(output, dbtSources())
    return `wrote ${mirrorTables.length} tables, ${liveViews.length} live views and ${historyViews.length} history views as dbt sources to ${output}`
  }
  const replaced = replaceGeneratedPart(await readFile(output, 'utf8'), markdownReference())
  if (replaced === null) throw new Error(`${output} has no generated part (its markers are missing)`)
  await writeFile(output, replaced)
  return `wrote the columns of ${mirrorTables.length} tables into ${output}`
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
  if (output === undefined) {
    process.stdout.write(format === 'dbt' ? dbtSources() : markdownReference())
    return EXIT.ok
  }
  try {
    console.error(await write(format, output))
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
    markdown: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
  },
  run: ({ values, positionals }) => runSchema({ values, positionals }),
}
