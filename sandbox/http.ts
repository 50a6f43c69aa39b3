// Responses and request bodies shared by both simulated services, shaped like the upstream's.
import type { Context } from 'hono'
import type { z } from 'zod'

/** 422 body: field → messages, as the upstream answers invalid records. */
export type FieldErrors = Record<string, string[]>

/** Zod's issues as the upstream words them; `input` tells a missing field ("can't be blank") from a wrong one. */
export function fieldErrors(error: z.ZodError, input?: unknown): FieldErrors {
  const errors: FieldErrors = {}
  for (const issue of error.issues) {
    const field = issue.path.length ? issue.path.join('.') : 'base'
    const given = issue.path.reduce<unknown>(
      (value, key) => (isObject(value) ? value[String(key)] : undefined),
      input,
    )
    const missing = input !== undefined && given === undefined
    const messages = errors[field] ?? []
    messages.push(missing ? "can't be blank" : issue.message)
    errors[field] = messages
  }
  return errors
}

/** Update and delete answer 200 with no body at all. */
export function emptyOk(): Response {
  return new Response(null, { status: 200 })
}

export function notFound(c: Context, what = 'the requested resource'): Response {
  return c.json({ error: 'not-found', description: `Couldn't find ${what}` }, 404)
}

export function paramMissing(c: Context, param: string): Response {
  return c.json(
    { error: 'param-missing', description: `param is missing or the value is empty: ${param}` },
    400,
  )
}

export function unprocessable(c: Context, errors: FieldErrors): Response {
  return c.json(errors, 422)
}

export type BodyResult = { ok: true; body: unknown } | { ok: false; response: Response }

/** The JSON body; 415 for anything but JSON (the upstream speaks JSON only), 400 when unparsable. */
export async function readJson(c: Context): Promise<BodyResult> {
  const type = c.req.header('content-type') ?? ''
  if (!type.toLowerCase().includes('application/json')) {
    return {
      ok: false,
      response: c.json({ error: 'unsupported-media-type', description: 'only application/json' }, 415),
    }
  }
  try {
    return { ok: true, body: await c.req.json() }
  } catch {
    return { ok: false, response: c.json({ error: 'bad-request', description: 'invalid JSON' }, 400) }
  }
}

/** The record under its wrapper key (`{ person: {...} }`); 400 param-missing without it. */
export async function readWrapped(c: Context, key: string): Promise<BodyResult> {
  const read = await readJson(c)
  if (!read.ok) return read
  const inner = isObject(read.body) ? read.body[key] : undefined
  if (!isObject(inner)) return { ok: false, response: paramMissing(c, key) }
  return { ok: true, body: inner }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A positive integer path or query parameter, or null. */
export function idParam(value: string | undefined): number | null {
  if (!value || !/^\d{1,15}$/.test(value)) return null
  return Number(value)
}

/** A numeric `:id` path segment. */
export const ID = ':id{[0-9]+}'

export const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)
