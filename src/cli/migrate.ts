// `crm-sync migrate`: applies pending migrations and exits; any error exits 1.
import { migrateToLatest } from '../store/migrate.ts'
import { type Command, EXIT } from './command.ts'
import { openCommandDatabase } from './database.ts'

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations and exit',
  usage: `Usage: crm-sync migrate

Applies pending migrations in one transaction under an advisory lock (replicas may start together).
\`crm-sync start\` does the same at every start; this is for a release step that runs before it.`,
  options: {},
  async run({ config, logger }) {
    const database = await openCommandDatabase(config, logger)
    try {
      const applied = await migrateToLatest(database.db, { logger, publication: config.mirrorPublication })
      console.log(
        applied.length
          ? `applied ${applied.length} migration(s): ${applied.join(', ')}`
          : 'schema up to date',
      )
      return EXIT.ok
    } finally {
      await database.close()
    }
  },
}
