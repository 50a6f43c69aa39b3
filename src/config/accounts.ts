// ACCOUNTS_FILE: the accounts one deployment mirrors, each into schemas of its own. The file says where
// each secret is (an environment variable or a file), never the secret, so that it may sit in a
// repository or a config map. YAML or JSON: JSON is YAML, so one parser reads both.
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { LineCounter, parseDocument } from 'yaml'
import { z } from 'zod'
import { type AccountSchemas, accountSchemas } from '../store/account-schemas.ts'

interface ServiceSettings {
  baseUrl: string
  apiKey: string
  /** null: the deployment's default (CRM_RATE_LIMIT, RESERVATION_RATE_LIMIT). */
  rateLimit: number | null
}

export interface AccountSettings {
  /** null: the one account of a deployment without ACCOUNTS_FILE (schemas crm, reservations, history, sync). */
  name: string | null
  schemas: AccountSchemas
  crm: ServiceSettings
  reservation: ServiceSettings | null
  webhookSecret: string | null
  webhookSecretPrevious: string | null
}

// At most 31 characters: the longest schema, reservations_<name>_live, stays far below PostgreSQL's 63.
// Not ending in _live: north_live's mirror would be crm_north_live, the schema of north's live views.
export const ACCOUNT_NAME = /^(?!.*_live$)[a-z][a-z0-9_]{0,30}$/
const NAME_RULE = 'an account name must be a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"'
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/

// The rules of CRM_BASE_URL, CRM_API_KEY and WEBHOOK_SECRET (src/config/index.ts, which exports none).
const httpUrl = z
  .string('must be an http(s) URL')
  .refine((value) => /^https?:\/\/[^\s/]+/i.test(value) && URL.canParse(value), 'must be an http(s) URL')
  .transform((value) => value.replace(/\/+$/, ''))
const secret = (minLength: number) =>
  z
    .string()
    .min(minLength, `must be at least ${minLength} characters`)
    .max(4096, 'is too long')
    .regex(/^\S+$/, 'may not contain spaces or other whitespace')
const apiKey = secret(8)
const webhookSecret = secret(16).regex(
  /^[A-Za-z0-9_-]+$/,
  'may contain only letters, digits, "-" and "_" (it becomes part of a URL)',
)

// The file's shape. The secrets the `*_env` and `*_file` keys point to are read apart, from the raw
// values, so that an unset variable is reported beside a mistake elsewhere in its account.
const mapping = {
  error: (issue: { code: string }) => (issue.code === 'invalid_type' ? 'must be a mapping' : undefined),
}
const envName = z
  .string('must be the name of an environment variable')
  .regex(ENV_NAME, 'must be the name of an environment variable (A-Z, 0-9 and "_")')
const filePath = z.string('must be a path').min(1, 'must be a path')
const rateLimit = z
  .int('must be a whole number from 1 to 10000')
  .min(1, 'must be at least 1')
  .max(10_000, 'must be at most 10000')
const service = z.strictObject(
  {
    base_url: httpUrl,
    api_key_env: envName.optional(),
    api_key_file: filePath.optional(),
    rate_limit: rateLimit.optional(),
  },
  mapping,
)
const account = z.strictObject(
  {
    crm: service,
    reservation: service.optional(),
    webhook_secret_env: envName.optional(),
    webhook_secret_file: filePath.optional(),
    webhook_secret_previous_env: envName.optional(),
    webhook_secret_previous_file: filePath.optional(),
  },
  mapping,
)
const accountsFile = z.strictObject(
  { accounts: z.record(z.string(), z.unknown(), mapping) },
  {
    error: (issue) => (issue.code === 'invalid_type' ? 'must be a mapping with the key accounts' : undefined),
  },
)

type Section = Record<string, unknown>
type ReadFile = (path: string) => string
type Env = Record<string, string | undefined>
type Accounts = { accounts: AccountSettings[]; problems: string[] }

const problem = (path: string, message: string) =>
  path ? `ACCOUNTS_FILE ${path}: ${message}` : `ACCOUNTS_FILE ${message}`

const asSection = (value: unknown): Section | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Section) : null

/** The key of `section` that says where the secret `key` is (`<key>_env` or `<key>_file`), if any. */
const secretKey = (section: Section, key: string) =>
  [`${key}_env`, `${key}_file`].find((name) => section[name] !== undefined) ?? null

/** A problem for each of zod's issues, by its path in the file; missing keys are "required". */
function describe(issue: z.core.$ZodIssue, at: string, raw: unknown): string[] {
  const path = [at, ...issue.path.map(String)].filter(Boolean).join('.')
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => problem(path ? `${path}.${key}` : key, 'is not a known key'))
  const value = issue.path.reduce<unknown>((node, key) => asSection(node)?.[String(key)], raw)
  const missing = issue.code === 'invalid_type' && value === undefined
  return [problem(path, missing ? 'is required' : issue.message)]
}

function unreadable(error: unknown): string {
  const code = error instanceof Error && 'code' in error ? String(error.code) : null
  if (code === 'ENOENT') return 'does not exist'
  if (code === 'EACCES' || code === 'EPERM') return 'may not be read (permission denied)'
  if (code === 'EISDIR') return 'is a directory'
  return code ? `cannot be read (${code})` : 'cannot be read'
}

/**
 * Reads the secrets the file points to and checks each with its rule. Problems name the variable or
 * file and the rule, never the value.
 */
function secretReader(env: Env, readFile: ReadFile, problems: string[]) {
  const checked = (value: string, path: string, what: string, rule: z.ZodType<string>) => {
    const result = rule.safeParse(value)
    for (const issue of result.error?.issues ?? []) problems.push(problem(path, `${what} ${issue.message}`))
    return result.success ? result.data : null
  }
  const fromFile = (file: string, path: string, rule: z.ZodType<string>) => {
    let content: string
    try {
      content = readFile(file).trim()
    } catch (error) {
      problems.push(problem(path, `${file} ${unreadable(error)}`))
      return null
    }
    if (content === '') problems.push(problem(path, `${file} is empty`))
    return content === '' ? null : checked(content, path, `the content of ${file}`, rule)
  }
  /** The secret `<key>_env` or `<key>_file` of `section` points to; null when neither or wrong. */
  return (section: Section, at: string, key: string, rule: z.ZodType<string>): string | null => {
    const name = section[`${key}_env`]
    const file = section[`${key}_file`]
    if (name !== undefined && file !== undefined) {
      problems.push(problem(at, `set ${key}_env or ${key}_file, not both`))
      return null
    }
    // A name or a path of the wrong shape is the schema's problem.
    if (typeof name === 'string' && ENV_NAME.test(name)) {
      const value = env[name]
      if (value) return checked(value, `${at}.${key}_env`, `the value of ${name}`, rule)
      problems.push(problem(`${at}.${key}_env`, `${name} is not set`))
    }
    if (typeof file === 'string' && file !== '') return fromFile(file, `${at}.${key}_file`, rule)
    return null
  }
}
type ReadSecret = ReturnType<typeof secretReader>

function readService(raw: unknown, at: string, read: ReadSecret, problems: string[]): string | null {
  const section = asSection(raw)
  if (section === null) return null // the schema names it
  if (secretKey(section, 'api_key') === null) problems.push(problem(at, 'needs api_key_env or api_key_file'))
  return read(section, at, 'api_key', apiKey)
}

/** One account's settings, or null with its problems pushed. */
function readAccount(name: string, raw: unknown, read: ReadSecret, problems: string[]) {
  const at = `accounts.${name.slice(0, 60)}`
  const before = problems.length
  if (!ACCOUNT_NAME.test(name)) problems.push(problem(at, NAME_RULE))
  const parsed = account.safeParse(raw)
  for (const issue of parsed.error?.issues ?? []) problems.push(...describe(issue, at, raw))
  const section = asSection(raw) ?? {}
  const crmKey = readService(section.crm, `${at}.crm`, read, problems)
  const reservationKey = readService(section.reservation, `${at}.reservation`, read, problems)
  const secret = read(section, at, 'webhook_secret', webhookSecret)
  const previous = read(section, at, 'webhook_secret_previous', webhookSecret)
  const previousKey = secretKey(section, 'webhook_secret_previous')
  if (previousKey && !secretKey(section, 'webhook_secret'))
    problems.push(problem(`${at}.${previousKey}`, 'needs webhook_secret_env or webhook_secret_file'))
  if (previous !== null && previous === secret)
    problems.push(problem(`${at}.${previousKey}`, 'must differ from the current webhook secret'))
  if (problems.length > before || !parsed.success || crmKey === null) return null
  const { crm, reservation } = parsed.data
  const settings: AccountSettings = {
    name,
    schemas: accountSchemas(name),
    crm: { baseUrl: crm.base_url, apiKey: crmKey, rateLimit: crm.rate_limit ?? null },
    reservation:
      reservation && reservationKey !== null
        ? { baseUrl: reservation.base_url, apiKey: reservationKey, rateLimit: reservation.rate_limit ?? null }
        : null,
    webhookSecret: secret,
    webhookSecretPrevious: previous,
  }
  return settings
}

const sameService = (a: ServiceSettings | null, b: ServiceSettings | null) =>
  a !== null && b !== null && a.apiKey === b.apiKey && new URL(a.baseUrl).href === new URL(b.baseUrl).href

// Two accounts on one upstream account and key would spend one key's rate budget twice, each unaware
// of the other; two on one CRM, whatever their keys, would each take the other's hooks for its own. A
// shared webhook secret is allowed: deliveries are routed by the account's path.
function sharedKeys(accounts: AccountSettings[]): string[] {
  const problems: string[] = []
  for (const [index, a] of accounts.entries()) {
    for (const b of accounts.slice(index + 1)) {
      const pair = `accounts ${a.name} and ${b.name} mirror the same`
      if (sameService(a.crm, b.crm)) problems.push(problem('', `${pair} CRM account with the same key`))
      // The CRM's hooks of one account would count as the other's own, and be replaced by it.
      else if (new URL(a.crm.baseUrl).href === new URL(b.crm.baseUrl).href)
        problems.push(problem('', `${pair} CRM (base_url): give each CRM account one entry`))
      if (sameService(a.reservation, b.reservation))
        problems.push(problem('', `${pair} reservation account with the same key`))
    }
  }
  return problems
}

/** The file's data, or its syntax errors by line and column (without the line's text: it may hold a secret). */
function parseText(text: string): { data: unknown; problems: string[] } {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { prettyErrors: false, lineCounter })
  const problems = doc.errors.map((error) => {
    const { line, col } = lineCounter.linePos(error.pos[0])
    return problem('', `line ${line}, column ${col}: ${error.message}`)
  })
  if (problems.length > 0) return { data: undefined, problems }
  try {
    return { data: doc.toJS(), problems: [] }
  } catch (error) {
    // An alias without its anchor, or too many aliases.
    return {
      data: undefined,
      problems: [problem('', error instanceof Error ? error.message : String(error))],
    }
  }
}

/**
 * Checks the text of an ACCOUNTS_FILE and reads the secrets it points to: `env` for `*_env`,
 * `readFile` for `*_file`. Every problem at once; no accounts unless there is none.
 */
export function parseAccounts(text: string, env: Env, readFile: ReadFile): Accounts {
  const { data, problems } = parseText(text)
  if (problems.length > 0) return { accounts: [], problems }
  const parsed = accountsFile.safeParse(data)
  for (const issue of parsed.error?.issues ?? []) problems.push(...describe(issue, '', data))
  const entries = Object.entries(asSection(asSection(data)?.accounts) ?? {})
  if (parsed.success && entries.length === 0)
    problems.push(problem('accounts', 'must name at least one account'))
  const read = secretReader(env, readFile, problems)
  const accounts = entries.flatMap(([name, raw]) => readAccount(name, raw, read, problems) ?? [])
  problems.push(...sharedKeys(accounts))
  return { accounts: problems.length > 0 ? [] : accounts, problems }
}

/** Reads and checks the file; problems are strings in the style of ConfigError's problems (src/config/index.ts). */
export function readAccountsFile(path: string, env: Env): Accounts {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { accounts: [], problems: [problem('', `${path} ${unreadable(error)}`)] }
  }
  // A relative `*_file` is found beside the accounts file, as compose files do, not in the working directory.
  const folder = dirname(resolve(path))
  return parseAccounts(text, env, (file) => readFileSync(resolve(folder, file), 'utf8'))
}

/**
 * The names of the accounts of an ACCOUNTS_FILE, in the file's order, for `crm-sync schema --dbt`: the
 * file's syntax, its shape (`accounts`, a mapping) and the names are checked, nothing else of an
 * account, and no key or secret is read (they may not be set where the dbt project is written).
 */
export function readAccountNames(path: string): { names: string[]; problems: string[] } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { names: [], problems: [problem('', `${path} ${unreadable(error)}`)] }
  }
  const { data, problems } = parseText(text)
  if (problems.length > 0) return { names: [], problems }
  const parsed = accountsFile.safeParse(data)
  for (const issue of parsed.error?.issues ?? []) problems.push(...describe(issue, '', data))
  const names = Object.keys(asSection(asSection(data)?.accounts) ?? {})
  if (parsed.success && names.length === 0)
    problems.push(problem('accounts', 'must name at least one account'))
  for (const name of names.filter((name) => !ACCOUNT_NAME.test(name)))
    problems.push(problem(`accounts.${name.slice(0, 60)}`, NAME_RULE))
  return { names: problems.length > 0 ? [] : names, problems }
}
