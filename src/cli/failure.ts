// Conditions a command meets in ordinary use, not bugs: a database out of reach or refusing the login,
// no schema, an upstream refusing the key or not answering, a port in use. Each is said in one line;
// the stack of its error is for debug level only.
import { UpstreamAuthError, UpstreamError } from '../api-client/index.ts'
import { DatabaseConnectionError } from '../database/runtime.ts'
import { RunRequestError } from '../sync/runs.ts'
import { NoSchemaError } from './existing-database.ts'
import { upstreamName } from './format.ts'

const KEYS: Record<string, string> = { crm: 'CRM_API_KEY', reservation: 'RESERVATION_API_KEY' }

/** What an upstream said in its refusal, shortly: `{"error": "not authorized"}` is `not authorized`. */
function reason(body: unknown): string {
  if (typeof body === 'string') return body.trim().split('\n')[0]?.slice(0, 100) ?? ''
  if (typeof body !== 'object' || body === null) return ''
  const fields = body as Record<string, unknown>
  const said = [fields.error, fields.message, fields.description].find((value) => typeof value === 'string')
  return typeof said === 'string' ? said.slice(0, 100) : ''
}

/** `the CRM refused the API key in CRM_API_KEY (GET /api/hooks answered 401: not authorized)`. */
export function refusedKey(error: UpstreamAuthError): string {
  const said = reason(error.body)
  return (
    `${upstreamName(error.service)} refused the API key in ${KEYS[error.service] ?? 'its API key variable'} ` +
    `(${error.method} ${error.path} answered ${error.status}${said ? `: ${said}` : ''})`
  )
}

interface SystemError extends Error {
  code: string
  syscall: string
  port?: number
}

function isSystemError(error: unknown): error is SystemError {
  const fields = error as Partial<SystemError> | null
  return error instanceof Error && typeof fields?.code === 'string' && typeof fields.syscall === 'string'
}

/** The line that says what went wrong, when `error` is an expected condition; null for anything else. */
export function expectedFailure(error: unknown): string | null {
  if (error instanceof UpstreamAuthError) return refusedKey(error)
  if (
    error instanceof DatabaseConnectionError ||
    error instanceof NoSchemaError ||
    error instanceof UpstreamError ||
    error instanceof RunRequestError
  ) {
    return error.message
  }
  if (isSystemError(error)) {
    if (error.syscall === 'listen' && error.code === 'EADDRINUSE') {
      return `port ${error.port ?? '(PORT)'} is in use by another process (set PORT, or stop that process)`
    }
    if (error.syscall === 'listen' && error.code === 'EACCES') {
      return `no permission to listen on port ${error.port ?? '(PORT)'} (set PORT above 1023)`
    }
    return error.message // the file system or the network refused something: its message names what
  }
  return null
}
