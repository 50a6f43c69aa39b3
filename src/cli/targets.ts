// What every command prints first, on stderr: the database it uses and the upstream accounts, with
// where each setting came from. The values are read as loadConfig reads them (src/config): the
// environment over `.env` in the working directory, an empty value counting as unset. So a stale
// CRM_BASE_URL in the shell that beats `.env` shows as such. Never a password or a key.
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseEnv } from 'node:util'
import type { Config } from '../config/index.ts'
import { databaseLocation, databaseUser } from '../database/runtime.ts'

type Variables = Record<string, string | undefined>

/** The variables of `.env` in `cwd`, if it exists. */
export function envFile(cwd = process.cwd()): Variables {
  const file = resolve(cwd, '.env')
  return existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {}
}

/**
 * Where the value of `name` in use comes from: `from the environment`, `from .env`, `from the
 * environment, overrides .env` (both set, differently), or `is empty in the environment, which
 * overrides .env` (then it is unset); null when neither sets it.
 */
export function sourceOf(name: string, environment: Variables, file: Variables): string | null {
  const shell = environment[name]
  const dotenv = file[name] || undefined
  if (shell === undefined) return dotenv === undefined ? null : 'from .env'
  if (shell === '') return dotenv === undefined ? null : 'is empty in the environment, which overrides .env'
  return dotenv !== undefined && dotenv !== shell
    ? 'from the environment, overrides .env'
    : 'from the environment'
}

/** An upstream's base URL as shown: without user, password, query or fragment. */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`
  } catch {
    return '(an unparsable URL)'
  }
}

/** ` (NAME from .env)`, or nothing when no variable sets it. */
function noted(name: string, source: (name: string) => string | null): string {
  const where = source(name)
  return where ? ` (${name} ${where})` : ''
}

/** The one or two lines: `database: ...` and `upstream: ...`. */
export function targetLines(
  config: Config,
  environment: Variables = process.env,
  file: Variables = envFile(),
): string[] {
  const source = (name: string) => sourceOf(name, environment, file)
  const url = config.databaseUrl
  const dataDir = source('DATA_DIR')
  const database = url
    ? `database: ${databaseLocation(url)} as user ${databaseUser(url)}${noted('DATABASE_URL', source)}`
    : `database: embedded PostgreSQL in ${config.dataDir} (DATABASE_URL ${source('DATABASE_URL') ?? 'is not set'}` +
      `${dataDir ? `; DATA_DIR ${dataDir}` : ''})`
  const crm = `CRM ${shownUrl(config.crm.baseUrl)}${noted('CRM_BASE_URL', source)}`
  const reservation = config.reservation
    ? `reservation ${shownUrl(config.reservation.baseUrl)}${noted('RESERVATION_BASE_URL', source)}`
    : `reservation service off${noted('RESERVATION_BASE_URL', source)}`
  return [database, `upstream: ${crm}; ${reservation}`]
}
