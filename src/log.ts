// Structured logs (pino JSON; pretty when a person watches a terminal).
//
// Secrets are kept out in three layers: fields named like secrets are redacted wherever they appear;
// every finished line is scrubbed of the configured secrets (raw, URL-encoded or JSON-escaped, so
// also inside URLs, messages and stack traces); and of the places secrets travel in URLs whatever
// their value (the webhook secret's path segment, `apikey=` and the like in a query, a bearer token),
// which also covers a secret that is no longer configured (an old hook's target).
//
// A job's lines carry its job id, resource and record id: the worker opens a log context
// (`withLogContext`) and every line written inside it, by any logger, API client or store included,
// gets those fields.
import { AsyncLocalStorage } from 'node:async_hooks'
import pino from 'pino'

export type Logger = pino.Logger

const SECRET_KEYS = [
  'apiKey',
  'api_key',
  'apikey',
  'token',
  'adminToken',
  'webhookSecret',
  'webhookSecretPrevious',
  'secret',
  'password',
]

export const REDACT_PATHS = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((key) => `*.${key}`),
  ...SECRET_KEYS.map((key) => `*.*.${key}`),
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers["x-apikey"]',
  '*.headers["x-apikey"]',
]

export const MASK = '***'

// Shorter secrets are only redacted by field name: masking them in free text would also hit
// ordinary words and numbers, and could break the JSON of the line.
const MIN_SCRUBBED_LENGTH = 8

const URL_SECRETS: [RegExp, string][] = [
  [/(\/webhooks\/crm\/)[^/\s"\\?#]+/gi, `$1${MASK}`],
  [/([?&](?:api_?key|token|secret|password|access_token)=)[^&\s"\\#]+/gi, `$1${MASK}`],
  [/(bearer\s+)[^\s"\\]+/gi, `$1${MASK}`],
]

/** The forms a secret takes in a serialized log line: raw, URL-encoded, form-encoded, JSON-escaped. */
function secretForms(secret: string): string[] {
  const raw = [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)]
  return raw.flatMap((form) => [form, JSON.stringify(form).slice(1, -1)])
}

/** Replaces the secrets and the secret parts of URLs in a serialized log line by `***`. */
export function secretScrubber(secrets: readonly (string | null | undefined)[]): (line: string) => string {
  const forms = [
    ...new Set(
      secrets
        .filter((secret): secret is string => typeof secret === 'string')
        .filter((secret) => secret.length >= MIN_SCRUBBED_LENGTH)
        .flatMap(secretForms),
    ),
  ].sort((a, b) => b.length - a.length) // a secret containing another is replaced first
  return (line) => {
    let scrubbed = line
    for (const form of forms) scrubbed = scrubbed.replaceAll(form, MASK)
    for (const [pattern, replacement] of URL_SECRETS) scrubbed = scrubbed.replace(pattern, replacement)
    return scrubbed
  }
}

/** The secrets of a configuration, for `createLogger({ secrets })`. */
export function configSecrets(config: {
  crm: { apiKey: string }
  reservation: { apiKey: string } | null
  webhookSecret: string | null
  /** WEBHOOK_SECRET_PREVIOUS, still accepted during a rotation: scrubbed like the current one. */
  webhookSecretPrevious?: string | null
  adminToken: string | null
  databaseUrl: string | null
  /** Every account's keys and secrets (ACCOUNTS_FILE), whichever account the configuration is of. */
  accounts?: readonly {
    crm: { apiKey: string }
    reservation: { apiKey: string } | null
    webhookSecret: string | null
    webhookSecretPrevious: string | null
  }[]
}): string[] {
  const secrets = [
    config.crm.apiKey,
    config.reservation?.apiKey,
    config.webhookSecret,
    config.webhookSecretPrevious,
    config.adminToken,
    ...(config.accounts ?? []).flatMap((account) => [
      account.crm.apiKey,
      account.reservation?.apiKey,
      account.webhookSecret,
      account.webhookSecretPrevious,
    ]),
  ]
  if (config.databaseUrl && URL.canParse(config.databaseUrl)) {
    const { password } = new URL(config.databaseUrl)
    secrets.push(password, password && decodeURIComponent(password))
  }
  return secrets.filter((secret): secret is string => Boolean(secret))
}

export type LogFields = Record<string, string | number | null | undefined>

const logContext = new AsyncLocalStorage<LogFields>()

/** Runs `work` with fields added to every log line written inside it (nested contexts add up). */
export function withLogContext<T>(fields: LogFields, work: () => T): T {
  return logContext.run({ ...logContext.getStore(), ...fields }, work)
}

// Fields the line's logger already binds (a child logger's) are left out, so that no key is doubled.
function contextFields(_object: object, _level: number, logger: Logger): LogFields {
  const fields = logContext.getStore()
  if (!fields) return {}
  const bound = logger.bindings()
  return Object.fromEntries(Object.entries(fields).filter(([key]) => !(key in bound)))
}

export interface LoggerOptions {
  level?: string
  pretty?: boolean
  destination?: pino.DestinationStream
  /** Values scrubbed from every line (see `configSecrets`). */
  secrets?: readonly (string | null | undefined)[]
}

// Properties some errors carry that are whole objects of a library, not facts about the failure: a pg
// error can hold its client (3 KB, with the backend's cancel key), a fetch error its request.
const ERROR_BAGGAGE = new Set(['client', 'connection', 'request', 'response', 'socket', 'pool', 'config'])

/** pino's error serializer, without library objects that errors drag along. */
export function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown
  if (typeof serialized !== 'object' || serialized === null) return serialized
  const fields = Object.entries(serialized as Record<string, unknown>).filter(
    ([key, value]) => !(ERROR_BAGGAGE.has(key) && typeof value === 'object' && value !== null),
  )
  return Object.fromEntries(
    fields.map(([key, value]) => [key, key === 'cause' ? serializeError(value) : value]),
  )
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const base: pino.LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: 'crm-sync' },
    serializers: { err: serializeError },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    mixin: contextFields,
    hooks: { streamWrite: secretScrubber(options.secrets ?? []) },
  }
  if (options.destination) return pino(base, options.destination)
  if (options.pretty ?? process.stdout.isTTY) {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } },
    })
  }
  return pino(base)
}
