// The one place that reads the environment. Everything else receives a parsed `Config`.
import { existsSync, readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { parseEnv } from 'node:util'
import { z } from 'zod'
import { HOOK_OBJECT_TYPES } from '../resources/index.ts'
import type { AccountSettings } from './accounts.ts'
import { accountPath, fileAccounts, singleAccount } from './environment-accounts.ts'
import { REMOVED_VARIABLES, TUNING } from './fixed.ts'
import { selectResources } from './resources.ts'

export { HOOK_OBJECT_TYPES, REMOVED_VARIABLES }
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export const CRM_AUTH_MODES = ['header', 'query'] as const

const httpUrl = z
  .string()
  .refine((value) => /^https?:\/\/[^\s/]+/i.test(value) && URL.canParse(value), 'must be an http(s) URL')
  .transform((value) => value.replace(/\/+$/, ''))

const postgresUrl = z
  .string()
  .refine(
    (value) => /^postgres(ql)?:\/\//i.test(value) && URL.canParse(value),
    'must be a postgres:// or postgresql:// URL',
  )

const secret = (minLength: number) =>
  z
    .string()
    .min(minLength, `must be at least ${minLength} characters`)
    .max(4096, 'is too long')
    .regex(/^\S+$/, 'may not contain spaces or other whitespace')

const webhookSecret = secret(16).regex(
  /^[A-Za-z0-9_-]+$/,
  'may contain only letters, digits, "-" and "_" (it becomes part of a URL)',
)

const host = z
  .string()
  .refine(
    (value) =>
      isIP(value) !== 0 ||
      /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(value),
    'must be an IP address (such as 127.0.0.1, 0.0.0.0 or ::) or a host name',
  )

const flag = z.enum(['true', 'false'], 'must be true or false').transform((value) => value === 'true')

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))

// Five fields, each `*`, a number, a range, a list or a step; names of days or months are not accepted.
const cronField = String.raw`(\*|\d+(-\d+)?)(\/\d+)?(,(\*|\d+(-\d+)?)(\/\d+)?)*`
const cron = z
  .string()
  .regex(
    new RegExp(`^${cronField}( ${cronField}){4}$`),
    'must be a cron expression of five fields, e.g. "0 3 * * *"',
  )

const environment = z.object({
  // Several accounts, each with the settings of CRM_*, RESERVATION_* and WEBHOOK_SECRET* (accounts.ts).
  ACCOUNTS_FILE: z.string().optional(),
  // Required without ACCOUNTS_FILE (fileAccounts).
  CRM_BASE_URL: httpUrl.optional(),
  // Shorter keys are not plausible, and could not be told apart from ordinary text in error messages.
  CRM_API_KEY: secret(8).optional(),
  RESERVATION_BASE_URL: httpUrl.optional(),
  RESERVATION_API_KEY: secret(8).optional(),
  DATABASE_URL: postgresUrl.optional(),
  PUBLIC_URL: httpUrl.optional(),
  WEBHOOK_SECRET: webhookSecret.optional(),
  // Accepted beside WEBHOOK_SECRET while a rotation goes on; hooks are registered with WEBHOOK_SECRET only.
  WEBHOOK_SECRET_PREVIOUS: webhookSecret.optional(),
  ADMIN_TOKEN: secret(16).optional(),
  PORT: integer(1, 65535).default(3000),
  // Unset: every interface, IPv6 and IPv4, as in a container; 127.0.0.1 keeps the port to this host.
  HOST: host.optional(),
  // /metrics is open like /healthz unless this asks for ADMIN_TOKEN there too.
  METRICS_REQUIRE_TOKEN: flag.default(false),
  // SIGTERM or SIGINT ends the process within this many seconds; keep it below the orchestrator's
  // grace period (Docker: --stop-timeout, Kubernetes: terminationGracePeriodSeconds).
  SHUTDOWN_TIMEOUT_SECONDS: integer(2, 3600).default(30),
  HOOK_OBJECT_TYPE: z
    .enum(HOOK_OBJECT_TYPES, `must be one of ${HOOK_OBJECT_TYPES.join(', ')}`)
    .default('lean'),
  // Which resources to mirror: qualified names (crm.people) or every resource of a schema (crm.*,
  // reservations.*), comma-separated; unset: every resource of the services configured.
  MIRROR_RESOURCES: z.string().optional(),
  INCREMENTAL_SYNC_INTERVAL: integer(10, 86_400).default(300),
  // Seconds between reads of the CRM's activity log (one request when nothing changed), which queue a
  // refresh of every record it names as changed: tasks and notes have no webhooks. 0: no feed.
  // The default keeps them within 5 s of a change for 30 requests a minute, a tenth of the budget.
  ACTIVITY_POLL_SECONDS: integer(0, 3600).default(2),
  // Seconds between reads of the newest page of reservation contacts and bookings (one request each
  // when nothing changed): the service has no webhooks. 0: no polls. The default: within 5 s of a
  // change for 40 requests a minute, 13% of the budget.
  RESERVATION_POLL_SECONDS: integer(0, 3600).default(3),
  // Seconds between checks that crm-sync's hooks still exist and are enabled (one hooks index request
  // per check across all replicas); 0 registers them at start only.
  HOOKS_CHECK_INTERVAL: integer(0, 86_400)
    .refine((seconds) => seconds === 0 || seconds >= 10, 'must be 0 (off) or from 10 to 86400')
    .default(300),
  FULL_SYNC_CRON: cron.default('0 3 * * *'),
  // The most the details pass spends of the CRM's budget, in percent: it reads each person's historic
  // events and assistants, which no include carries (2 requests a person), outside first syncs and
  // only when its batch leaves a fifth of the budget free (where polls yield). 0: not read.
  DETAILS_BUDGET_PERCENT: integer(0, 50).default(10),
  LOG_LEVEL: z.enum(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(', ')}`).default('info'),
  DATA_DIR: z.string().min(1).default('./.data'),
  EMBEDDED_POSTGRES_PORT: integer(1, 65535).optional(),
  // The upstream clients. The CRM allows 50 requests per 10 s per key. The reservation service's limit
  // and page size are not published: the CRM's are assumed. A 429 pauses every replica (Retry-After,
  // else a whole window), so a lower real limit costs pauses, never data; a page shorter than asked
  // teaches the walk the real size.
  CRM_AUTH: z.enum(CRM_AUTH_MODES, `must be one of ${CRM_AUTH_MODES.join(', ')}`).default('header'),
  CRM_RATE_LIMIT: integer(1, 10_000).default(50),
  RESERVATION_RATE_LIMIT: integer(1, 10_000).default(50),
  UPSTREAM_TIMEOUT_SECONDS: integer(1, 600).default(30),
  UPSTREAM_MAX_RETRIES: integer(0, 20).default(4),
  // A refresh waits until its record has had no delivery for this long (at most one coalescing slot):
  // a burst of changes that arrives over seconds costs one fetch, after its last delivery.
  REFRESH_QUIET_MS: integer(0, 60_000).default(500),
  // Days the inbox keeps deliveries once done with (applied; rejected or given up, kept longer for
  // inspection and a replay) and sync.runs keeps finished runs; 0 keeps them for ever.
  INBOX_PROCESSED_RETENTION_DAYS: integer(0, 3650).default(7),
  INBOX_REJECTED_RETENTION_DAYS: integer(0, 3650).default(30),
  RUNS_RETENTION_DAYS: integer(0, 3650).default(90),
  // Days a closed version of a record stays in schema history once the next one replaced it; 0 (the
  // default) keeps every version for ever.
  HISTORY_RETENTION_DAYS: integer(0, 3650).default(0),
  // The logical replication publication of the mirror tables that crm-sync keeps for warehouse loaders
  // (docs/warehouse.md); `off`: none is created or changed.
  MIRROR_PUBLICATION: z
    .string()
    .regex(
      /^[a-z_][a-z0-9_]{0,62}$/,
      'must be off or a name of lower-case letters, digits and "_" (at most 63)',
    )
    .default('crm_sync_mirror'),
})

// Rules between variables. Checked on the raw values, so that they are reported together with the
// problems of single variables (a zod refinement would only run once every variable is valid).
function crossProblems(env: Record<string, string>): string[] {
  const problems: string[] = []
  if (Boolean(env.RESERVATION_BASE_URL) !== Boolean(env.RESERVATION_API_KEY)) {
    const missing = env.RESERVATION_BASE_URL ? 'RESERVATION_API_KEY' : 'RESERVATION_BASE_URL'
    problems.push(
      `${missing} is required when the other RESERVATION_* variable is set (set both, or neither to turn reservation sync off)`,
    )
  }
  if (env.PUBLIC_URL && !env.WEBHOOK_SECRET && !env.ACCOUNTS_FILE)
    problems.push('WEBHOOK_SECRET is required when PUBLIC_URL is set')
  if (env.WEBHOOK_SECRET_PREVIOUS && !env.WEBHOOK_SECRET)
    problems.push('WEBHOOK_SECRET is required when WEBHOOK_SECRET_PREVIOUS is set')
  if (env.WEBHOOK_SECRET_PREVIOUS && env.WEBHOOK_SECRET_PREVIOUS === env.WEBHOOK_SECRET)
    problems.push('WEBHOOK_SECRET_PREVIOUS must differ from WEBHOOK_SECRET')
  if (env.METRICS_REQUIRE_TOKEN === 'true' && !env.ADMIN_TOKEN)
    problems.push('ADMIN_TOKEN is required when METRICS_REQUIRE_TOKEN is true')
  return problems
}

export type Config = ReturnType<typeof toConfig> & {
  /** ACCOUNTS_FILE's accounts, or the one account (name null) of CRM_*, RESERVATION_* and WEBHOOK_SECRET*. */
  accounts: AccountSettings[]
  /** Variables set that are no longer read (REMOVED_VARIABLES): the start warns of each. */
  removed: readonly string[]
}

/** The settings of the deployment, with `primary`'s (the first account's) upstreams and secrets. */
function toConfig(env: z.output<typeof environment>, primary: AccountSettings, reservation: boolean) {
  return {
    /** The account this configuration is of (./account-config.ts gives the others'). */
    account: { name: primary.name, schemas: primary.schemas },
    crm: { baseUrl: primary.crm.baseUrl, apiKey: primary.crm.apiKey },
    reservation: primary.reservation
      ? { baseUrl: primary.reservation.baseUrl, apiKey: primary.reservation.apiKey }
      : null,
    databaseUrl: env.DATABASE_URL ?? null,
    publicUrl: env.PUBLIC_URL ?? null,
    // Where the account's hooks point: PUBLIC_URL, and /accounts/<name> for an account of ACCOUNTS_FILE.
    hooksUrl: env.PUBLIC_URL ? `${env.PUBLIC_URL}${accountPath(primary.name)}` : null,
    webhookSecret: primary.webhookSecret,
    webhookSecretPrevious: primary.webhookSecretPrevious,
    adminToken: env.ADMIN_TOKEN ?? null,
    port: env.PORT,
    host: env.HOST ?? null,
    metricsRequireToken: env.METRICS_REQUIRE_TOKEN,
    shutdownTimeoutSeconds: env.SHUTDOWN_TIMEOUT_SECONDS,
    hookObjectType: env.HOOK_OBJECT_TYPE,
    // The resources mirrored (MIRROR_RESOURCES), in the table's order: of every account (an account
    // without a reservation service mirrors the CRM's of them).
    resources: selectResources({ ...env, reservation }).names,
    incrementalSyncIntervalSeconds: env.INCREMENTAL_SYNC_INTERVAL,
    // 0: the activity feed is off.
    activityPollSeconds: env.ACTIVITY_POLL_SECONDS,
    // 0: no newest-page polls.
    reservationPollSeconds: env.RESERVATION_POLL_SECONDS,
    // 0: no periodic checks.
    hooksCheckIntervalSeconds: env.HOOKS_CHECK_INTERVAL,
    fullSyncCron: env.FULL_SYNC_CRON,
    detailsBudgetShare: env.DETAILS_BUDGET_PERCENT / 100,
    syncLookbackSeconds: TUNING.lookbackSeconds,
    logLevel: env.LOG_LEVEL,
    dataDir: resolve(env.DATA_DIR),
    embeddedPostgresPort: env.EMBEDDED_POSTGRES_PORT ?? null,
    refreshCoalesceSeconds: TUNING.refreshCoalesceSeconds,
    refreshQuietMs: env.REFRESH_QUIET_MS,
    reconcileBudgetPercent: TUNING.verificationBudgetPercent,
    // null: off.
    mirrorPublication: env.MIRROR_PUBLICATION === 'off' ? null : env.MIRROR_PUBLICATION,
    // Days after which rows are pruned; null: kept for ever.
    retention: {
      inboxProcessedDays: env.INBOX_PROCESSED_RETENTION_DAYS || null,
      inboxRejectedDays: env.INBOX_REJECTED_RETENTION_DAYS || null,
      runsDays: env.RUNS_RETENTION_DAYS || null,
      historyDays: env.HISTORY_RETENTION_DAYS || null,
    },
    // CRM_RATE_LIMIT and RESERVATION_RATE_LIMIT: an account's unless ACCOUNTS_FILE gives its own.
    defaultRateLimits: { crm: env.CRM_RATE_LIMIT, reservation: env.RESERVATION_RATE_LIMIT },
    upstream: {
      timeoutSeconds: env.UPSTREAM_TIMEOUT_SECONDS,
      maxRetries: env.UPSTREAM_MAX_RETRIES,
      maxPages: TUNING.maxPages,
      crm: {
        auth: env.CRM_AUTH,
        requests: primary.crm.rateLimit ?? env.CRM_RATE_LIMIT,
        windowSeconds: TUNING.rateWindowSeconds,
        pageSize: TUNING.crmPageSize,
      },
      reservation: {
        requests: primary.reservation?.rateLimit ?? env.RESERVATION_RATE_LIMIT,
        windowSeconds: TUNING.rateWindowSeconds,
        pageSize: TUNING.reservationPageSize,
      },
    },
  }
}

export class ConfigError extends Error {
  readonly problems: string[]
  constructor(problems: string[]) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`
    super(`invalid configuration (${count}):\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/**
 * Parses the environment. Empty values count as unset (as in most `.env` and compose files).
 * Problems name the variable and the rule, never the value: values may be secrets.
 */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  )
  const result = environment.safeParse(present)
  const problems = crossProblems(present as Record<string, string>)
  const fromFile = fileAccounts(present as Record<string, string>)
  problems.push(...fromFile.problems)
  const reservation = present.ACCOUNTS_FILE
    ? fromFile.accounts.some((account) => account.reservation !== null)
    : Boolean(present.RESERVATION_BASE_URL && present.RESERVATION_API_KEY)
  problems.push(...selectResources({ ...present, reservation }).problems)
  for (const issue of result.error?.issues ?? []) {
    const name = String(issue.path[0] ?? 'environment')
    const message =
      issue.code === 'invalid_type' && present[name] === undefined ? 'is required' : issue.message
    problems.push(`${name} ${message}`)
  }
  if (!result.success || problems.length > 0) throw new ConfigError([...new Set(problems)].sort())
  const removed = Object.keys(present).filter((name) => Object.hasOwn(REMOVED_VARIABLES, name))
  const data = result.data as z.output<typeof environment>
  const accounts = data.ACCOUNTS_FILE ? fromFile.accounts : singleAccount(data)
  const [primary] = accounts
  if (!primary) throw new ConfigError(['ACCOUNTS_FILE names no account'])
  return { ...toConfig(data, primary, reservation), accounts, removed }
}

/** `process.env` over the variables of `.env` in the working directory, if that file exists. */
export function readEnvironment(cwd = process.cwd()): Record<string, string | undefined> {
  const file = resolve(cwd, '.env')
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {}
  return { ...fromFile, ...process.env }
}

export function loadConfig(): Config {
  return parseConfig(readEnvironment())
}
