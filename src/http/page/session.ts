// Who may see the status page: a browser signed in with ADMIN_TOKEN (an HttpOnly, SameSite=Strict
// cookie), or any client that sends the token as a bearer token, as the admin API takes it. The cookie
// holds a digest of the token, not the token: it is worth nothing once the token changes, and the
// token never sits in a browser's cookie store.
import { createHmac } from 'node:crypto'
import type { Context } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import { secretMatcher } from '../../receiver/secret.ts'
import { carriesToken } from '../bearer.ts'

const COOKIE = 'crm_sync_session'
/** A session lasts a working day; signing in again costs the token. */
const MAX_AGE_SECONDS = 12 * 3600

export interface PageSession {
  /** Whether the request is signed in (cookie) or carries the token (bearer). */
  admitted(c: Context): boolean
  /** Whether `presented` (the login form's field) is the token. */
  tokenMatches(presented: string | undefined): boolean
  signIn(c: Context): void
  signOut(c: Context): void
}

export function pageSession(token: string): PageSession {
  const value = createHmac('sha256', token).update('crm-sync status page session').digest('base64url')
  const cookieMatches = secretMatcher(value)
  const tokenMatches = secretMatcher(token)
  const secure = (c: Context) => new URL(c.req.url).protocol === 'https:'
  return {
    admitted: (c) => carriesToken(c, token) || cookieMatches(getCookie(c, COOKIE)),
    tokenMatches,
    signIn(c) {
      setCookie(c, COOKIE, value, {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/',
        maxAge: MAX_AGE_SECONDS,
        secure: secure(c),
      })
    },
    signOut(c) {
      deleteCookie(c, COOKIE, { path: '/', secure: secure(c) })
    },
  }
}
