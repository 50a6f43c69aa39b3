// The Node HTTP server under the app: where it listens, how long a client may take, and a close that
// ends by a deadline. Node's defaults let one client hold a connection for minutes (60 s for its
// headers, 300 s for its request), and `server.close()` stops enforcing even those while it waits
// for every connection to end: one client that never finishes its headers kept a stopping crm-sync
// alive for as long as it liked (issue 17).
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import type { Hono } from 'hono'

export const SERVER_TIMEOUTS = {
  // A webhook sender writes its headers at once; 10 s is ample even over a slow link.
  headersTimeout: 10_000,
  // The whole request, a 1 MiB body included; a sender has given up on its delivery by then.
  requestTimeout: 30_000,
  // Longer than the idle timeout of the proxies in front (nginx and cloud load balancers: 60 s), so
  // that it is never crm-sync that closes a connection the proxy is about to reuse (a 502).
  keepAliveTimeout: 65_000,
  // How often Node looks for requests over those limits (its default, 30 s, would triple them).
  connectionsCheckingInterval: 1_000,
} as const

export interface ListenOptions {
  port: number
  /** null: every interface (IPv6 and IPv4 where the system has both). */
  host: string | null
}

export function listen(app: Hono, { port, host }: ListenOptions): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        port,
        ...(host ? { hostname: host } : {}),
        serverOptions: SERVER_TIMEOUTS,
      },
      () => resolve(server as Server),
    ) as Server
    server.once('error', reject)
  })
}

/**
 * Stops accepting connections and closes idle ones at once; requests under way may finish until
 * `until` (epoch ms), then every connection left is closed. Resolves with the number closed so.
 */
export async function closeServer(server: Server, until: number): Promise<number> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  server.closeIdleConnections()
  // A connection whose request ends after the close is idle then, not closed by Node: look again.
  const sweep = setInterval(() => server.closeIdleConnections(), 100)
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, until - Date.now()), 'late')
  })
  try {
    if ((await Promise.race([closed, late])) !== 'late') return 0
    const open = await new Promise<number>((resolve) => server.getConnections((_, count) => resolve(count)))
    server.closeAllConnections()
    await closed
    return open
  } finally {
    clearInterval(sweep)
    clearTimeout(timer)
  }
}
