// The bearer token of a request, as the admin API and /readyz's details read it.
import type { Context } from 'hono'
import { secretMatches } from '../receiver/secret.ts'

export function bearerToken(c: Context): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')
  return match?.[1]
}

/** Whether the request carries `token` as its bearer token (compared in constant time). */
export function carriesToken(c: Context, token: string): boolean {
  return secretMatches(bearerToken(c), token)
}
