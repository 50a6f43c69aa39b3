// `crm-sync migrate`: applies pending migrations and exits; any error exits 1.
import { accountConfigs } from '../config/account-config.ts'
import { DEFAULT_SCHEMAS, forAccount } from '../store/account-schemas.ts'
import { migrateToLatest } from '../store/migrate.ts'
import { maintainPublication } from '../store/publication.ts'
import { type Command, EXIT } from './command.ts'
import { openCommandDatabase } from './database.ts'

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations and exit',
  usage: `Usage: crm-sync migrate

Applies pending migrations in one transaction under an advisory lock (replicas may start together).
\`crm-sync start\` does the same at every start; this is for a release step that runs before it.
With several accounts (ACCOUNTS_FILE), every account's schemas, or those of --account <name>.`,
  options: {},
  async run({ config, logger, values }) {
    const database = await openCommandDatabase(config, logger)
    try {
      // Without --account, every account: the configuration is the deployment's, not one account's.
      const accounts = values.account === undefined ? accountConfigs(config) : [config]
      for (const account of accounts) {
        const db = forAccount(database.db, account.account.schemas)
        const applied = await migrateToLatest(db, { logger })
        const name = account.account.name === null ? '' : `${account.account.name}: `
        console.log(
          applied.length
            ? `${name}applied ${applied.length} migration(s): ${applied.join(', ')}`
            : `${name}schema up to date`,
        )
      }
      await maintainPublication(
        forAccount(database.db, DEFAULT_SCHEMAS),
        config.mirrorPublication,
        logger,
        // The publication holds every account's tables, whichever accounts were migrated.
        config.accounts.map((account) => account.schemas),
      )
      return EXIT.ok
    } finally {
      await database.close()
    }
  },
}
