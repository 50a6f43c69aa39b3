// A TCP proxy on loopback that the suite can break: put between the engine and PostgreSQL (or the
// upstream), it can be cut (new connections refused, open ones destroyed, as a stopped server does)
// and slowed (every chunk held back in both directions, as a saturated link or server does), without
// touching the server behind it. With several targets it is a round-robin load balancer.
import net from 'node:net'

export interface Target {
  host: string
  port: number
}

export interface ProxyStats {
  connections: number
  /** Connections destroyed by a cut. */
  destroyed: number
}

export interface Proxy {
  port: number
  /** Stops listening (connections are refused) and destroys every open connection. */
  cut(): Promise<void>
  /** Listens again on the same port. */
  restore(): Promise<void>
  /** Holds every chunk back this long, in both directions (0: pass through). */
  slow(latencyMs: number): void
  stats(): ProxyStats
  close(): Promise<void>
}

interface Pending {
  chunk: Buffer
  due: number
}

/** Copies `from` to `to`, each chunk no sooner than `latency()` ms after it came, in order. */
function relay(from: net.Socket, to: net.Socket, latency: () => number): void {
  const queue: Pending[] = []
  let timer: NodeJS.Timeout | undefined
  let ended = false
  const pump = () => {
    timer = undefined
    const now = Date.now()
    while (queue.length > 0 && (queue[0] as Pending).due <= now) to.write((queue.shift() as Pending).chunk)
    if (queue.length > 0) timer = setTimeout(pump, (queue[0] as Pending).due - now)
    else if (ended) to.end()
  }
  from.on('data', (chunk: Buffer) => {
    const delay = latency()
    if (delay === 0 && queue.length === 0) {
      to.write(chunk)
      return
    }
    queue.push({ chunk, due: Date.now() + delay })
    if (!timer) pump()
  })
  from.on('end', () => {
    ended = true
    if (queue.length === 0) to.end()
  })
  from.on('close', () => {
    if (queue.length > 0 && !ended) to.destroy()
  })
  to.on('close', () => {
    clearTimeout(timer)
    from.destroy()
  })
}

export async function startProxy(targets: Target[], options: { port?: number } = {}): Promise<Proxy> {
  if (targets.length === 0) throw new Error('a proxy needs a target')
  /** The client side of every open connection (destroying it destroys the other side). */
  const open = new Set<net.Socket>()
  const stats: ProxyStats = { connections: 0, destroyed: 0 }
  let latencyMs = 0
  let next = 0
  const latency = () => latencyMs

  const server = net.createServer((client) => {
    stats.connections++
    const target = targets[next++ % targets.length] as Target
    const upstream = net.connect(target.port, target.host)
    open.add(client)
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true)
      socket.on('error', () => {})
      socket.on('close', () => {
        open.delete(client)
        client.destroy()
        upstream.destroy()
      })
    }
    relay(client, upstream, latency)
    relay(upstream, client, latency)
  })
  server.on('error', () => {})

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      const failed = (error: Error) => reject(error)
      server.once('error', failed)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', failed)
        resolve()
      })
    })
  await listen(options.port ?? 0)
  const port = (server.address() as net.AddressInfo).port

  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve()
      server.close(() => resolve())
      for (const socket of open) {
        socket.destroy()
        stats.destroyed++
      }
    })

  return {
    port,
    cut: stopListening,
    async restore() {
      if (server.listening) return
      // The port was ours a moment ago; should another process take it meanwhile, say so plainly.
      for (let attempt = 0; ; attempt++) {
        try {
          await listen(port)
          return
        } catch (error) {
          if (attempt >= 20) throw new Error(`the proxy could not listen on ${port} again: ${String(error)}`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
    },
    slow(ms) {
      latencyMs = ms
    },
    stats: () => ({ ...stats }),
    async close() {
      latencyMs = 0
      await stopListening()
    },
  }
}
