// The configuration of each account of a deployment (docs/accounts.md): the deployment's settings
// with the account's upstreams, secrets, rate limits, schemas and resources. Everything that works
// for one account (the clients, the workers, the receiver, the hooks, the status) takes the
// configuration of that account, as it took the deployment's before there were several.
import type { AccountSettings } from './accounts.ts'
import { accountPath } from './environment-accounts.ts'
import { type Config, ConfigError } from './index.ts'

/** `config` as the account `settings` has it. */
export function accountConfig(config: Config, settings: AccountSettings): Config {
  const { crm, reservation } = settings
  return {
    ...config,
    account: { name: settings.name, schemas: settings.schemas },
    hooksUrl: config.publicUrl ? `${config.publicUrl}${accountPath(settings.name)}` : null,
    crm: { baseUrl: crm.baseUrl, apiKey: crm.apiKey },
    reservation: reservation ? { baseUrl: reservation.baseUrl, apiKey: reservation.apiKey } : null,
    webhookSecret: settings.webhookSecret,
    webhookSecretPrevious: settings.webhookSecretPrevious,
    // An account without a reservation service mirrors none of its resources.
    resources: reservation ? config.resources : config.resources.filter((name) => name.startsWith('crm.')),
    upstream: {
      ...config.upstream,
      crm: { ...config.upstream.crm, requests: crm.rateLimit ?? config.defaultRateLimits.crm },
      reservation: {
        ...config.upstream.reservation,
        requests: reservation?.rateLimit ?? config.defaultRateLimits.reservation,
      },
    },
  }
}

/** The configuration of every account, in the file's order. */
export function accountConfigs(config: Config): Config[] {
  return config.accounts.map((settings) => accountConfig(config, settings))
}

/**
 * The account a command or a request names (`--account`, `?account=`); without a name, the one
 * account there is. Throws a ConfigError naming the accounts when the name is missing or unknown.
 */
export function selectAccount(config: Config, name: string | undefined): Config {
  const names = config.accounts.map((settings) => settings.name)
  const settings =
    name === undefined && config.accounts.length === 1
      ? config.accounts[0]
      : config.accounts.find((account) => account.name === name)
  if (settings) return accountConfig(config, settings)
  const known = names.filter((known) => known !== null).join(', ')
  throw new ConfigError([
    name === undefined
      ? `there are ${names.length} accounts (${known}): name one with --account`
      : `no account is named ${name}${known ? `: the accounts are ${known}` : ' (ACCOUNTS_FILE is not set)'}`,
  ])
}
