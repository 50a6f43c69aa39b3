// The request core shared by both upstream clients: budget, timeout, retries, typed failures.
// Nothing here logs or throws a URL: the CRM's key may sit in the query string, and every text that
// came from outside and goes into an error (a failure's body, network errors) has the secrets, and the
// secret parts of URLs (a hook's target), scrubbed before anybody sees it. Data is never scrubbed.
import { type Logger, secretScrubber } from '../log.ts'
import { serialize, storable } from '../store/jsonb.ts'
import type { Budget } from './budget.ts'
import { type Clock, sleepUntil } from './clock.ts'
import { readWithout } from './discard.ts'
import {
  RequestAborted,
  type RequestLine,
  type Service,
  type UnavailableReason,
  UpstreamAuthError,
  type UpstreamError,
  UpstreamGoneError,
  UpstreamRequestError,
  UpstreamUnavailableError,
} from './errors.ts'
import type { UpstreamMetrics } from './metrics.ts'

export type Query = Record<string, string | number | undefined>

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'DELETE'
  /** Path below `${baseUrl}/api/`, e.g. `people/42`. */
  path: string
  query?: Query
  body?: unknown
  /** Route family for the counters, e.g. `people.show`. */
  route: string
  /** Keys of a record whose string values a successful answer is read without (discard.ts). */
  discard?: readonly string[]
  /**
   * A 401 or 403 here concerns the record asked for (a list of one person's that the key may not
   * read), not the key: it is not reported as a refused key (/readyz, the status page).
   */
  recordScoped?: boolean
}

export interface UpstreamAnswer {
  status: number
  /** Parsed JSON; the text when it is not JSON; null when empty. */
  body: unknown
  /** When the request that got this answer was sent. */
  fetchedAt: Date
  /** Milliseconds from sending it to its answer, on this process's clock (no wait for the budget). */
  tookMs: number
}

export interface UpstreamSettings {
  service: Service
  baseUrl: string
  /** Puts the credential on a request (a header, or the query for the CRM's `apikey` mode). */
  authorize(url: URL, headers: Headers): void
  /** Strings that must never reach an error or a log line (8 characters or more; see log.ts). */
  secrets: readonly string[]
  timeoutMs: number
  maxRetries: number
  /** How long a 429 without a usable Retry-After pauses everybody. */
  defaultPauseMs: number
}

export interface UpstreamDeps {
  budget: Budget
  clock: Clock
  logger: Logger
  metrics: UpstreamMetrics
  random?: () => number
  /** Cuts off the request in flight and sends no other: `send` throws RequestAborted. */
  signal?: AbortSignal
}

export interface Upstream {
  service: Service
  send(request: UpstreamRequest): Promise<UpstreamAnswer>
}

const BACKOFF_BASE_MS = 500
const BACKOFF_MAX_MS = 30_000
// Retry-After beyond this is taken as this: the retries are bounded anyway, and a sweep should fail
// rather than hang for hours.
const MAX_PAUSE_MS = 10 * 60_000

type Outcome =
  | { kind: 'answer'; status: number; body: unknown; retryAfter: string | null }
  | { kind: 'failure'; reason: 'timeout' | 'network'; detail: string }

export function createUpstream(settings: UpstreamSettings, deps: UpstreamDeps): Upstream {
  const { service } = settings
  const { budget, clock, logger, metrics } = deps
  const random = deps.random ?? Math.random
  const scrub = secretScrubber(settings.secrets)

  async function exchange(request: UpstreamRequest): Promise<Outcome> {
    const url = new URL(`${settings.baseUrl}/api/${request.path}`)
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value))
    }
    const headers = new Headers({ accept: 'application/json', 'user-agent': 'crm-sync' })
    if (request.body !== undefined) headers.set('content-type', 'application/json')
    settings.authorize(url, headers)
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), settings.timeoutMs)
    try {
      const response = await fetch(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: deps.signal ? AbortSignal.any([controller.signal, deps.signal]) : controller.signal,
        // Not followed: fetch would carry the X-apikey header to wherever the redirect points.
        redirect: 'manual',
      })
      // Data is kept as it came (a key may well occur in a record's fields); the body of a failure,
      // which ends up in error messages, logs and `last_error`, is scrubbed.
      const ok = response.status >= 200 && response.status < 300
      const text =
        ok && request.discard?.length ? await readWithout(response, request.discard) : await response.text()
      return {
        kind: 'answer',
        status: response.status,
        body: parseBody(ok ? text : scrub(text)),
        retryAfter: response.headers.get('retry-after'),
      }
    } catch (error) {
      if (deps.signal?.aborted) throw new RequestAborted(`${service}: the request was cut off`)
      if (controller.signal.aborted) {
        return { kind: 'failure', reason: 'timeout', detail: `no answer within ${settings.timeoutMs} ms` }
      }
      return { kind: 'failure', reason: 'network', detail: scrub(describeNetworkError(error)) }
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    service,
    async send(request) {
      // A POST that may have reached the upstream is not repeated: it could create a second hook.
      const repeatable = request.method !== 'POST'
      for (let attempt = 1; ; attempt++) {
        if (deps.signal?.aborted) throw new RequestAborted(`${service}: no request is sent any more`)
        const lease = await budget.take(deps.signal)
        // The database's clock, which every replica shares (see BudgetLease.grantedAt).
        const sentAt = lease.grantedAt.getTime()
        let outcome: Outcome
        const started = performance.now()
        try {
          outcome = await exchange(request)
        } finally {
          await budget.release(lease)
        }
        const tookMs = performance.now() - started
        const status = outcome.kind === 'answer' ? String(outcome.status) : outcome.reason
        metrics.requests.add({ upstream: service, route: request.route, status })
        logger.debug(
          { upstream: service, route: request.route, path: request.path, status },
          'upstream request',
        )
        if (outcome.kind === 'answer' && outcome.status < 300) {
          metrics.authFailures.delete(service)
          return { status: outcome.status, body: outcome.body, fetchedAt: new Date(sentAt), tookMs }
        }

        const line: RequestLine = {
          service,
          method: request.method,
          path: `/api/${request.path}`,
          sentAt: new Date(sentAt),
        }
        const failure = classify(line, outcome, attempt)
        if (failure.error instanceof UpstreamAuthError && !request.recordScoped) {
          const { status: code, message } = failure.error
          metrics.authFailures.set(service, { status: code as number, message, at: new Date() })
          logger.error(
            { upstream: service, route: request.route, status: code },
            `${service} refused the API key: ${message}`,
          )
        }
        const retryAfter =
          outcome.kind === 'answer' && outcome.status === 429 ? outcome.retryAfter : undefined
        const rateLimited = retryAfter !== undefined
        if (rateLimited) {
          const pauseMs = parseRetryAfter(retryAfter, clock.now()) ?? settings.defaultPauseMs
          logger.warn({ upstream: service, route: request.route, pauseMs, attempt }, 'rate limited; pausing')
          // Every replica's next take waits for the pause, whether or not this caller tries again.
          await budget.rateLimited(pauseMs)
        }
        const retry = failure.retryable && (repeatable || rateLimited) && attempt <= settings.maxRetries
        if (!retry) throw failure.error

        const reason = failure.error instanceof UpstreamUnavailableError ? failure.error.reason : status
        metrics.retries.add({ upstream: service, route: request.route, reason })
        if (!rateLimited) {
          const delayMs = backoff(attempt, random)
          logger.warn(
            { upstream: service, route: request.route, path: request.path, status, attempt, delayMs },
            'upstream request failed; retrying',
          )
          await sleepUntil(clock, clock.now() + delayMs, deps.signal)
        }
      }
    },
  }
}

function classify(
  line: RequestLine,
  outcome: Outcome,
  attempt: number,
): { retryable: boolean; error: UpstreamError } {
  const unavailable = (reason: UnavailableReason, status: number | null, body: unknown, detail: string) => ({
    retryable: true,
    error: new UpstreamUnavailableError(line, reason, attempt, status, body, detail),
  })
  if (outcome.kind === 'failure') return unavailable(outcome.reason, null, null, outcome.detail)
  const { status, body } = outcome
  if (status === 429) return unavailable('rate-limited', status, body, 'rate limited (429)')
  if (status >= 500) return unavailable('server', status, body, `server error ${status}: ${summary(body)}`)
  if (status === 404)
    return { retryable: false, error: new UpstreamGoneError(line, status, body, 'not found (404)') }
  if (status === 401 || status === 403) {
    return {
      retryable: false,
      error: new UpstreamAuthError(line, status, body, `not authorized (${status}): ${summary(body)}`),
    }
  }
  return {
    retryable: false,
    error: new UpstreamRequestError(line, status, body, `rejected (${status}): ${summary(body)}`),
  }
}

/** Exponential backoff with jitter: half the step fixed, half random, so replicas do not retry in step. */
export function backoff(attempt: number, random: () => number): number {
  const step = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1))
  return Math.round(step / 2 + (random() * step) / 2)
}

/** Retry-After in seconds or as an HTTP date, in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null || value.trim() === '') return null
  const trimmed = value.trim()
  const ms = /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now
  if (Number.isNaN(ms)) return null
  return Math.min(Math.max(ms, 0), MAX_PAUSE_MS)
}

function parseBody(text: string): unknown {
  if (text.trim() === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The start of an answer's body for an error message (which may be kept in a text column: no NUL). */
function summary(body: unknown): string {
  const text = storable(
    typeof body === 'string' ? body : (serialize(body) ?? '(JSON nested too deep to show)'),
  ) as string
  return text.length > 300 ? `${text.slice(0, 300)}...` : text
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined
  const detail = [cause?.code, cause?.message].filter((part) => typeof part === 'string').join(': ')
  return detail ? `${error.message} (${detail})` : error.message
}
