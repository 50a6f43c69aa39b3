// Structured logs (pino JSON; pretty when a person watches a terminal). Secrets are redacted by key
// wherever they appear in a logged object.
import pino from 'pino'

export type Logger = pino.Logger

const SECRET_KEYS = [
  'apiKey',
  'api_key',
  'apikey',
  'token',
  'adminToken',
  'webhookSecret',
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

export interface LoggerOptions {
  level?: string
  pretty?: boolean
  destination?: pino.DestinationStream
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const base = {
    level: options.level ?? 'info',
    base: { service: 'crm-sync' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
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
