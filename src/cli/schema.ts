// `crm-sync schema --dbt [--output FILE]`: the mirror's dbt sources, from the data dictionary
// (src/resources/dictionary). It needs no configuration and no database: main.ts runs it before
// reading the configuration.
import { writeFile } from 'node:fs/promises'
import { dbtSources } from '../resources/dictionary/dbt.ts'
import { liveViews, mirrorTables } from '../resources/dictionary/index.ts'
import { type Command, EXIT, type OptionValues } from './command.ts'

const USAGE = `Usage: crm-sync schema --dbt [--output <file>]

Prints the mirror as dbt sources (a sources.yml, version 2), from crm-sync's data dictionary: sources
crm and reservations with every table and column, their types and descriptions, and sources crm_live
and reservations_live with the views of the live rows. The same descriptions are the comments on the
tables and views in the database. Needs no configuration and no database.

Options:
  --dbt            the dbt sources (the one format so far)
  --output <file>  write them to <file> instead of stdout`

/** Runs the command from its parsed command line (no configuration needed). */
export async function runSchema(parsed: { values: OptionValues; positionals: string[] }): Promise<number> {
  const { values, positionals } = parsed
  if (positionals.length > 0 || values.dbt !== true) {
    const problem =
      positionals.length > 0 ? `unexpected argument "${positionals[0]}"` : 'say which format: --dbt'
    console.error(`crm-sync schema: ${problem}\n\n${USAGE}`)
    return EXIT.usage
  }
  const text = dbtSources()
  const output = typeof values.output === 'string' ? values.output : undefined
  if (output === undefined) {
    process.stdout.write(text)
    return EXIT.ok
  }
  try {
    await writeFile(output, text)
  } catch (error) {
    console.error(`crm-sync schema: failed: ${(error as Error).message}`)
    return EXIT.failed
  }
  console.error(
    `wrote ${mirrorTables.length} tables and ${liveViews.length} live views as dbt sources to ${output}`,
  )
  return EXIT.ok
}

export const schemaCommand: Command = {
  name: 'schema',
  summary: 'print the mirror as dbt sources (sources.yml), with every description',
  usage: USAGE,
  options: { dbt: { type: 'boolean' }, output: { type: 'string', short: 'o' } },
  run: ({ values, positionals }) => runSchema({ values, positionals }),
}
