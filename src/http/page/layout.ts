// The frame of every status page: title, navigation, sign-out, the style sheet (inline: the page needs
// nothing from elsewhere), and a refresh of the page by itself every REFRESH_SECONDS without script.
import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>

export const REFRESH_SECONDS = 15

const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --late: #9a6700; --error: #cf222e; --line: #8884; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 0 1rem 2rem; }
header { display: flex; gap: 1.25rem; align-items: baseline; border-bottom: 1px solid var(--line); padding: .75rem 0; }
header h1 { font-size: 1.1rem; margin: 0 auto 0 0; }
header form { margin: 0; }
h2 { font-size: 1rem; margin: 1.5rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
.state { font-weight: 600; white-space: nowrap; }
.state-on-time { color: var(--ok); } .state-late { color: var(--late); } .state-error { color: var(--error); }
.muted { opacity: .7; } .error { color: var(--error); }
form.inline { display: inline; margin: 0; }
button { font: inherit; cursor: pointer; }
.notice { border: 1px solid var(--line); padding: .5rem .75rem; margin: 1rem 0; }
`

/**
 * Whose pages: `base` starts every link and form of an account's pages ('' at the root, for the one
 * account of a deployment without ACCOUNTS_FILE; `/accounts/north` for the account north), and
 * `account` names it (null: the one account). Sign-in and sign-out stay at the root: one for all.
 */
export interface Frame {
  base: string
  account: string | null
}

/** The one account of a deployment without ACCOUNTS_FILE, at the root. */
export const ROOT: Frame = { base: '', account: null }

/** The index of several accounts at `/` (accounts.ts), rather than one account's pages. */
export const ACCOUNTS = 'accounts'

function navigation(frame: Frame | typeof ACCOUNTS): Html {
  const accounts = html`<a href="/">Accounts</a>`
  if (frame === ACCOUNTS) return html`<nav>${accounts}</nav>`
  const { base, account } = frame
  return html`<nav>${account === null ? '' : html`${accounts} · `}<a href="${base}/">Overview</a> · <a href="${base}/runs">Runs</a> · <a href="${base}/deliveries">Deliveries</a> · <a href="${base}/jobs">Jobs</a></nav>`
}

export function layout(
  title: string,
  body: Html,
  options: { refresh?: boolean; signedIn?: boolean; frame?: Frame | typeof ACCOUNTS } = {},
): Html {
  const { refresh = true, signedIn = true, frame = ROOT } = options
  const account = frame === ACCOUNTS ? null : frame.account
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh ? html`<meta http-equiv="refresh" content="${REFRESH_SECONDS}">` : ''}
<title>${title}${account === null ? '' : ` · ${account}`} · crm-sync</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>crm-sync${account === null ? '' : html` · <span id="account">${account}</span>`}</h1>
${
  signedIn
    ? html`${navigation(frame)}
<form method="post" action="/logout"><button type="submit">Sign out</button></form>`
    : ''
}
</header>
<main>
${body}
</main>
</body>
</html>`
}

/** A time as the page shows it: ISO 8601 to the second, in UTC, or a dash. */
export function shownTime(value: string | Date | null | undefined): string {
  if (value === null || value === undefined) return '–'
  return `${new Date(value).toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/** How long ago, in the largest unit that fits. */
export function ago(value: string | Date | null | undefined, now: Date): string {
  if (value === null || value === undefined) return 'never'
  const seconds = Math.max(0, Math.round((now.getTime() - new Date(value).getTime()) / 1000))
  if (seconds < 120) return `${seconds} s ago`
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} days ago`
}

export const stateClass = (state: string) => `state state-${state.replace(' ', '-')}`
