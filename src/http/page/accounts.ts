// The status page of several accounts (ACCOUNTS_FILE, docs/accounts.md): at `/`, the accounts side by
// side, the worst first; each account's own pages (routes.ts) under `/accounts/<name>/`; one sign-in,
// at `/login`, for all of them. An account is as bad as its worst table (status/table-health.ts), and
// of two in the same state the one with more tables in error, then late, comes first (the order of
// `crm-sync status` without --account). Without ACCOUNTS_FILE there is no index: the one account's page
// is at the root, as it always was.
import { Hono } from 'hono'
import { html } from 'hono/html'
import { accountPath } from '../../config/environment-accounts.ts'
import type { Config } from '../../config/index.ts'
import type { Logger } from '../../log.ts'
import { collectStatus, type Status } from '../../status/engine-status.ts'
import {
  type AccountHealth,
  accountHealth,
  type HealthState,
  worseAccountFirst,
} from '../../status/table-health.ts'
import type { Db } from '../../store/database.ts'
import type { JobQueue } from '../../sync/job-queue.ts'
import { ACCOUNTS, type Html, layout, shownTime, stateClass } from './layout.ts'
import { hooksLine } from './overview.ts'
import type { StatusPage } from './routes.ts'
import { pageDoor } from './sign-in.ts'

/** What the pages take of an account (account.ts's AccountParts). */
export interface PagedAccount {
  /** null: the one account of a deployment without ACCOUNTS_FILE. */
  name: string | null
  config: Config
  db: Db
  queue: JobQueue
  page: StatusPage | null
  /** The upstreams that refuse the account's key, with why. */
  refusedKeys(): string[]
  /** The hooks as /readyz reports them. */
  hookStatus(): unknown
}

interface AccountRow {
  name: string
  health: AccountHealth
  /** Why, when its status could not be read. */
  unreadable: string | null
  tables: number
  liveRows: number
  inbox: Status['inbox'] | null
  refused: string[]
  hooks: unknown
}

type NamedAccount = PagedAccount & { name: string }

async function accountRow(account: NamedAccount, now: Date, logger: Logger): Promise<AccountRow> {
  const refused = account
    .refusedKeys()
    .map((why) => (why.startsWith(`${account.name}: `) ? why.slice(account.name.length + 2) : why))
  const row = { name: account.name, refused, hooks: account.hookStatus() }
  let status: Status
  try {
    status = await collectStatus({ db: account.db, boss: account.queue, config: account.config })
  } catch (error) {
    // One account's trouble does not hide the others: it shows in error, among the worst.
    logger.error({ err: error, account: account.name }, 'status page: an account’s status failed')
    const unreadable = 'its status could not be read (see the logs)'
    const health = { state: 'error', errors: 0, late: 0 } as const
    return { ...row, health, unreadable, tables: 0, liveRows: 0, inbox: null }
  }
  return {
    ...row,
    health: accountHealth(status.resources, now, account.config.incrementalSyncIntervalSeconds),
    unreadable: null,
    tables: status.resources.length,
    liveRows: status.resources.reduce((total, resource) => total + resource.live_rows, 0),
    inbox: status.inbox,
  }
}

function tablesLine(row: AccountRow): string {
  if (row.unreadable) return row.unreadable
  const { errors, late } = row.health
  const parts = [errors > 0 ? `${errors} in error` : '', late > 0 ? `${late} late` : ''].filter(Boolean)
  return `${parts.length > 0 ? `${parts.join(', ')} of` : 'all'} ${row.tables} tables${parts.length > 0 ? '' : ' on time'}`
}

function accountRowHtml(row: AccountRow): Html {
  const base = accountPath(row.name)
  const failed = row.inbox?.failed ?? 0
  const { state } = row.health
  return html`<tr data-account="${row.name}" data-state="${state}">
<td><a href="${base}/">${row.name}</a></td>
<td><span class="${stateClass(state)}">${state}</span><br><span class="muted">${tablesLine(row)}</span></td>
<td class="number">${row.liveRows.toLocaleString('en')}</td>
<td class="number">${row.inbox ? row.inbox.accepted.toLocaleString('en') : '–'}</td>
<td class="number">${failed > 0 ? html`<a class="error" href="${base}/deliveries?outcome=failed">${failed.toLocaleString('en')}</a>` : row.inbox ? '0' : '–'}</td>
<td>${
    row.refused.length === 0
      ? 'accepted'
      : row.refused.map(
          (why) => html`<span class="state state-error">refused</span> <span class="error">${why}</span><br>`,
        )
  }</td>
<td>${hooksLine(row.hooks)}</td>
</tr>`
}

function accountsPage(rows: AccountRow[], now: Date): Html {
  const sorted = [...rows].sort((a, b) => worseAccountFirst(a.health, b.health))
  const count = (state: HealthState) => rows.filter((row) => row.health.state === state).length
  const body = html`
<h2>Accounts</h2>
<p>${count('error')} in error, ${count('late')} late, ${count('on time')} on time, the worst first: an account is
as bad as its worst table. Its name leads to its page: its tables, runs, deliveries and jobs.</p>
<table id="accounts">
<thead><tr><th>Account</th><th>State</th><th class="number">Live rows</th><th class="number">Deliveries waiting</th>
<th class="number">Failed</th><th>API keys</th><th>Hooks</th></tr></thead>
<tbody>
${sorted.map(accountRowHtml)}
</tbody>
</table>
<p class="muted">As of ${shownTime(now)}; this page reloads itself.</p>`
  return layout('Accounts', body, { frame: ACCOUNTS })
}

export interface StatusPages {
  /** To mount at the root: one account's page, or the index and every account's page. */
  routes: Hono[]
  /** Closes what each page's /jobs opened. */
  close(): Promise<void>
}

/**
 * The status page of every account: without ACCOUNTS_FILE, the one account's page (at the root, with
 * its sign-in); with it, each account's page under its path and, at `/`, the index of them with the
 * sign-in. Nothing without ADMIN_TOKEN.
 */
export function statusPages(
  accounts: readonly PagedAccount[],
  deps: { token: string | null; publicUrl?: string | null; logger: Logger },
): StatusPages {
  const pages = accounts.flatMap((account) => (account.page ? [account.page] : []))
  const close = async () => {
    await Promise.all(pages.map((page) => page.close()))
  }
  const named = accounts.filter((account): account is NamedAccount => account.name !== null)
  if (!deps.token || named.length === 0) return { routes: pages.map((page) => page.routes), close }

  const { logger } = deps
  const door = pageDoor({ token: deps.token, publicUrl: deps.publicUrl, logger })
  const index = new Hono()
  door.mountSignIn(index)
  index.use('/', door.admit)
  index.get('/', async (c) => {
    const now = new Date()
    const rows = await Promise.all(named.map((account) => accountRow(account, now, logger)))
    return c.html(accountsPage(rows, now))
  })
  return { routes: [index, ...pages.map((page) => page.routes)], close }
}
