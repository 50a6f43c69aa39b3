// What the control API refuses, in-process and over HTTP (control-routes.ts answers with its status).
import type { FieldErrors } from './http.ts'

/** A control call the sandbox refused: 404 for an unknown record, 422 with field errors. */
export class SandboxError extends Error {
  readonly status: 404 | 422
  readonly errors: FieldErrors
  constructor(status: 404 | 422, message: string, errors: FieldErrors = {}) {
    super(message)
    this.status = status
    this.errors = errors
  }
}
