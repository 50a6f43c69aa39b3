// The Node HTTP server under the app (issue 17): explicit timeouts that hold while it runs, a close
// that does not wait for keep-alive connections, and one that ends by its deadline whatever clients do.
import { once } from 'node:events'
import http, { type Server } from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { createMetricsRoute } from '../../src/http/metrics.ts'
import { closeServer, listen, SERVER_TIMEOUTS } from '../../src/http/server.ts'
import { settledWithin, waitFor } from '../support/process.ts'

const servers: Server[] = []
const sockets: net.Socket[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    if (server.listening) await new Promise((resolve) => server.close(resolve))
  }
})

async function serve(app: Hono) {
  const server = await listen(app, { port: 0, host: '127.0.0.1' })
  servers.push(server)
  return { server, port: (server.address() as AddressInfo).port }
}

/** A connection that sends part of a request's headers and never the rest. */
async function unfinishedRequest(port: number) {
  const socket = net.connect(port, '127.0.0.1')
  sockets.push(socket)
  socket.on('error', () => {})
  socket.resume() // reads what comes (a 408), so that the server's close is seen
  // 'close' follows an error too (a reset): wait for it, not for `once`, which rejects on 'error'
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  await once(socket, 'connect')
  socket.write('POST /webhooks/crm/secret/person/update HTTP/1.1\r\nHost: crm-sync\r\n')
  return { closed }
}

describe('the HTTP server', () => {
  it('sets its timeouts explicitly', async () => {
    const { server } = await serve(new Hono())
    expect(SERVER_TIMEOUTS).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      connectionsCheckingInterval: 1_000,
    })
    expect(server.headersTimeout).toBe(10_000)
    expect(server.requestTimeout).toBe(30_000)
    expect(server.keepAliveTimeout).toBe(65_000)
  })

  it('closes a connection that has not sent its headers within 10 s', async () => {
    const { port } = await serve(new Hono())
    const opened = Date.now()
    const { closed } = await unfinishedRequest(port)
    expect(await settledWithin(closed, 15_000)).toMatchObject({ status: 'fulfilled' })
    expect(Date.now() - opened).toBeGreaterThanOrEqual(9_500)
  }, 30_000)

  it('listens on the host it is given', async () => {
    const { server } = await serve(new Hono())
    expect((server.address() as AddressInfo).address).toBe('127.0.0.1')
  })
})

describe('closeServer', () => {
  it('lets a request under way finish, then closes its keep-alive connection at once', async () => {
    let finish = () => {}
    const finished = new Promise<void>((resolve) => {
      finish = resolve
    })
    let started = false
    const app = new Hono().get('/slow', async (c) => {
      started = true
      await finished
      return c.text('done')
    })
    const { server, port } = await serve(app)
    const agent = new http.Agent({ keepAlive: true })
    const answer = new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/slow', agent }, (response) => {
          let body = ''
          response.on('data', (chunk) => {
            body += chunk
          })
          response.on('end', () => resolve(body))
        })
        .on('error', reject)
    })
    await waitFor(async () => (started ? true : undefined), 5_000, 'the request to start')
    const closing = closeServer(server, Date.now() + 20_000)
    finish()
    expect(await answer).toBe('done')
    // without waiting for the keep-alive timeout (65 s) nor the 20 s given
    expect(await settledWithin(closing, 2_000)).toEqual({ status: 'fulfilled', value: 0 })
    agent.destroy()
  })

  it('closes the connections left at its deadline and says how many', async () => {
    let started = 0
    const app = new Hono().post('/slow', async (c) => {
      started++
      // (the body never comes whole: the read fails when the connection is closed)
      return c.text(await c.req.text().catch(() => ''))
    })
    const { server, port } = await serve(app)
    // two requests whose bodies never come whole
    const requests = await Promise.all(
      [1, 2].map(async () => {
        const socket = net.connect(port, '127.0.0.1')
        sockets.push(socket)
        socket.on('error', () => {})
        socket.resume()
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
        await once(socket, 'connect')
        socket.write('POST /slow HTTP/1.1\r\nHost: crm-sync\r\nContent-Length: 100\r\n\r\n{"id":')
        return { closed }
      }),
    )
    await waitFor(async () => (started === 2 ? true : undefined), 5_000, 'both requests to start')
    const closing = closeServer(server, Date.now() + 300)
    expect(await settledWithin(closing, 3_000)).toEqual({ status: 'fulfilled', value: 2 })
    expect(await settledWithin(Promise.all(requests.map((request) => request.closed)), 1_000)).toMatchObject({
      status: 'fulfilled',
    })
  })
})

describe('/metrics with a token', () => {
  const metrics = { scrape: async () => 'crm_sync_inbox_depth 0\n', contentType: 'text/plain; version=0.0.4' }

  it('answers 401 without the token, or with another one, and 200 with it', async () => {
    const app = createMetricsRoute(metrics, { token: 'admin-token-0123456789' })
    const anonymous = await app.request('/metrics')
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="crm-sync metrics"')
    expect(await anonymous.json()).toEqual({
      error: 'unauthorized: send Authorization: Bearer <ADMIN_TOKEN>',
    })
    const wrong = await app.request('/metrics', {
      headers: { authorization: 'Bearer admin-token-0123456780' },
    })
    expect(wrong.status).toBe(401)
    const right = await app.request('/metrics', {
      headers: { authorization: 'Bearer admin-token-0123456789' },
    })
    expect(right.status).toBe(200)
    expect(await right.text()).toBe('crm_sync_inbox_depth 0\n')
  })

  it('stays open without one', async () => {
    const response = await createMetricsRoute(metrics).request('/metrics')
    expect(response.status).toBe(200)
  })
})
