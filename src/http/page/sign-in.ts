// The status page's door, one for every account: the sign-in form at `/login` and the sign-out at
// `/logout`, both at the root whatever page asked (the session cookie's path is `/`, so one sign-in
// admits to every account's pages); who is let in (`admit`); and the same-origin check of forms that
// change state: the session cookie is SameSite=Strict, and hono's csrf middleware refuses a form
// posted from another origin (PUBLIC_URL's origin counts as this one, for a page served behind a proxy).
import type { Context, Hono, MiddlewareHandler } from 'hono'
import { csrf } from 'hono/csrf'
import type { Logger } from '../../log.ts'
import { loginPage } from './login.ts'
import { pageSession } from './session.ts'

export interface PageDoor {
  /** Lets a signed-in request (or one with the bearer token) on; sends a browser to `/login`. */
  admit: MiddlewareHandler
  /** Refuses (403) a form posted from another origin. */
  sameOrigin: MiddlewareHandler
  /** Mounts `/login` and `/logout` on `app` (mounted at the root); both send to `/` once done. */
  mountSignIn(app: Hono): void
}

export function pageDoor(deps: { token: string; publicUrl?: string | null; logger: Logger }): PageDoor {
  const { logger } = deps
  const session = pageSession(deps.token)
  const publicOrigin = deps.publicUrl ? new URL(deps.publicUrl).origin : null
  const sameOrigin = csrf({
    origin: (origin, c) => origin === new URL(c.req.url).origin || origin === publicOrigin,
  })

  // A browser is sent to the form, any other client gets a 401.
  const admit = async (c: Context, next: () => Promise<void>) => {
    if (session.admitted(c)) return next()
    if ((c.req.header('accept') ?? '').includes('text/html')) return c.redirect('/login', 303)
    return c.json(
      { error: 'unauthorized: sign in at /login, or send Authorization: Bearer <ADMIN_TOKEN>' },
      401,
    )
  }

  return {
    admit,
    sameOrigin,
    mountSignIn(app) {
      for (const path of ['/login', '/logout']) app.use(path, sameOrigin)
      app.get('/login', (c) => (session.admitted(c) ? c.redirect('/', 303) : c.html(loginPage())))
      app.post('/login', async (c) => {
        const form = await c.req.parseBody()
        if (!session.tokenMatches(typeof form.token === 'string' ? form.token : undefined)) {
          logger.warn('status page: sign-in with a wrong token')
          return c.html(loginPage({ failed: true }), 401)
        }
        session.signIn(c)
        return c.redirect('/', 303)
      })
      app.post('/logout', (c) => {
        session.signOut(c)
        return c.redirect('/login', 303)
      })
    },
  }
}
