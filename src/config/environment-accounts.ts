// The accounts of the environment: ACCOUNTS_FILE's (./accounts.ts), or the one account that CRM_*,
// RESERVATION_* and WEBHOOK_SECRET* make without it, with the problems of either.
import { accountSchemas } from '../store/account-schemas.ts'
import { type AccountSettings, readAccountsFile } from './accounts.ts'

/** Where an account's webhooks and pages are: `/accounts/north`, or the root for the one account. */
export const accountPath = (name: string | null): string => (name === null ? '' : `/accounts/${name}`)

// The variables of the one account of a deployment without ACCOUNTS_FILE, which the file replaces.
const PER_ACCOUNT = [
  'CRM_BASE_URL',
  'CRM_API_KEY',
  'RESERVATION_BASE_URL',
  'RESERVATION_API_KEY',
  'WEBHOOK_SECRET',
  'WEBHOOK_SECRET_PREVIOUS',
] as const

/** ACCOUNTS_FILE's accounts (none without it) and the problems of the file and beside it. */
export function fileAccounts(env: Record<string, string>): {
  accounts: AccountSettings[]
  problems: string[]
} {
  if (!env.ACCOUNTS_FILE) {
    const missing = ['CRM_BASE_URL', 'CRM_API_KEY'].filter((name) => !env[name])
    return { accounts: [], problems: missing.map((name) => `${name} is required`) }
  }
  const { accounts, problems } = readAccountsFile(env.ACCOUNTS_FILE, env)
  for (const name of PER_ACCOUNT.filter((variable) => env[variable]))
    problems.push(`${name} is set per account in ACCOUNTS_FILE: unset it here`)
  const unsigned = env.PUBLIC_URL ? accounts.filter((account) => account.webhookSecret === null) : []
  for (const { name } of unsigned)
    problems.push(`ACCOUNTS_FILE accounts.${name}: needs a webhook secret, since PUBLIC_URL is set`)
  return { accounts, problems }
}

/** The one account of a deployment without ACCOUNTS_FILE, of variables checked already. */
export function singleAccount(env: Partial<Record<(typeof PER_ACCOUNT)[number], string>>): AccountSettings[] {
  if (!env.CRM_BASE_URL || !env.CRM_API_KEY) return []
  return [
    {
      name: null,
      schemas: accountSchemas(null),
      crm: { baseUrl: env.CRM_BASE_URL, apiKey: env.CRM_API_KEY, rateLimit: null },
      reservation:
        env.RESERVATION_BASE_URL && env.RESERVATION_API_KEY
          ? { baseUrl: env.RESERVATION_BASE_URL, apiKey: env.RESERVATION_API_KEY, rateLimit: null }
          : null,
      webhookSecret: env.WEBHOOK_SECRET ?? null,
      webhookSecretPrevious: env.WEBHOOK_SECRET_PREVIOUS ?? null,
    },
  ]
}
