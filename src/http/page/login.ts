// The sign-in form: one field, the ADMIN_TOKEN.
import { html } from 'hono/html'
import { type Html, layout } from './layout.ts'

export function loginPage(options: { failed?: boolean } = {}): Html {
  const body = html`
<h2>Sign in</h2>
${options.failed ? html`<p class="error" role="alert">That is not the admin token.</p>` : ''}
<form method="post" action="/login">
<p><label>Admin token (<code>ADMIN_TOKEN</code>)<br>
<input type="password" name="token" autocomplete="current-password" required autofocus size="40"></label></p>
<p><button type="submit">Sign in</button></p>
</form>`
  return layout('Sign in', body, { refresh: false, signedIn: false })
}
