// Typed failures of the upstream services. Messages name the service, method and path (never a
// query string, which may hold the key) and carry the upstream's body with every secret scrubbed.

export type Service = 'crm' | 'reservation'

export interface RequestLine {
  service: Service
  method: string
  /** Path below the base URL, without the query. */
  path: string
  /** When the attempt that failed was sent. */
  sentAt: Date
}

export class UpstreamError extends Error {
  override name = 'UpstreamError'
  readonly service: Service
  readonly method: string
  readonly path: string
  readonly sentAt: Date
  /** HTTP status of the last answer, or null when none arrived. */
  readonly status: number | null
  /** The upstream's answer (parsed JSON, or text), secrets scrubbed. */
  readonly body: unknown

  constructor(line: RequestLine, status: number | null, body: unknown, detail: string) {
    super(`${line.service} ${line.method} ${line.path}: ${detail}`)
    this.service = line.service
    this.method = line.method
    this.path = line.path
    this.sentAt = line.sentAt
    this.status = status
    this.body = body
  }
}

/** 404: the record (or route) does not exist (any more). */
export class UpstreamGoneError extends UpstreamError {
  override name = 'UpstreamGoneError'
}

/** 401 or 403: the key is wrong or lacks the right. Never retried. */
export class UpstreamAuthError extends UpstreamError {
  override name = 'UpstreamAuthError'
}

/** Any other 4xx (400, 409, 415, 422, ...): the request is wrong; retrying cannot help. */
export class UpstreamRequestError extends UpstreamError {
  override name = 'UpstreamRequestError'
}

export type UnavailableReason = 'timeout' | 'network' | 'server' | 'rate-limited'

/** Timeouts, network errors, 5xx or 429 that outlasted every retry. */
export class UpstreamUnavailableError extends UpstreamError {
  override name = 'UpstreamUnavailableError'
  readonly reason: UnavailableReason
  readonly attempts: number

  constructor(
    line: RequestLine,
    reason: UnavailableReason,
    attempts: number,
    status: number | null,
    body: unknown,
    detail: string,
  ) {
    super(line, status, body, `${detail} (gave up after ${attempts} attempts)`)
    this.reason = reason
    this.attempts = attempts
  }
}

/** A 2xx answer that is not the shape the spec promises (not JSON, not an array, ...). */
export class UpstreamResponseError extends UpstreamError {
  override name = 'UpstreamResponseError'
}

/** A record the sync cannot use: no id, or an unparsable `updated_at`. */
export class RejectedRecordError extends Error {
  override name = 'RejectedRecordError'
  readonly resource: string
  /** The record's id (a string where the resource's ids are text), null when it has none. */
  readonly id: number | string | null
  readonly field: string

  constructor(resource: string, id: number | string | null, field: string, problem: string) {
    super(`${resource} ${id ?? '(no id)'}: ${field} ${problem}`)
    this.resource = resource
    this.id = id
    this.field = field
  }
}

/** Paging that would not end: more pages than the count or the page limit allows. */
export class PagingError extends Error {
  override name = 'PagingError'
}

/** The caller stopped wanting the answer (a sweep's job was stopped): nothing more is sent. */
export class RequestAborted extends Error {
  override name = 'RequestAborted'
}
