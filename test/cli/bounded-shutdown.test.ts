// `crm-sync start` as a process, stopping (issue 17): a client that never finishes its request cannot
// hold a stopping crm-sync, the shutdown ends by SHUTDOWN_TIMEOUT_SECONDS whatever is stuck (exit 1
// then), HOST narrows where it listens, and METRICS_REQUIRE_TOKEN puts /metrics behind ADMIN_TOKEN.
import { once } from 'node:events'
import { chmod, mkdtemp } from 'node:fs/promises'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/database/free-port.ts'
import {
  createTestDatabase,
  dropTestDatabase,
  useTestDatabase,
  waitForLockWaiter,
} from '../support/database.ts'
import { type CliProcess, readyStatus, runCli, settledWithin, waitFor } from '../support/process.ts'

const database = useTestDatabase()
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const processes: CliProcess[] = []
const sockets: net.Socket[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  for (const run of processes) {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL')
    await run.exited
  }
})

/** crm-sync on the test database, with a CRM that refuses connections (sweeps fail at once), ready. */
async function startCrmSync(env: Record<string, string> = {}) {
  const cwd = await mkdtemp(join(tmpdir(), 'crm-sync-bounded-'))
  await chmod(cwd, 0o755)
  const port = await freePort()
  const run = runCli(['start'], {
    cwd,
    env: {
      CRM_BASE_URL: 'http://127.0.0.1:9',
      CRM_API_KEY: 'crm-key-123',
      UPSTREAM_MAX_RETRIES: '0',
      DATABASE_URL: database.url,
      PORT: String(port),
      WEBHOOK_SECRET: 'bounded-secret-0123456789',
      LOG_LEVEL: 'info',
      ...env,
    },
  })
  processes.push(run)
  await waitFor(() => readyStatus(port), 30_000, '/readyz').catch((error) => {
    throw new Error(`${error.message}\n${run.output()}`)
  })
  return { run, port }
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
  socket.write('POST /webhooks/crm/bounded-secret-0123456789/person/update HTTP/1.1\r\nHost: crm-sync\r\n')
  return { socket, closed }
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

describe('a stopping crm-sync', () => {
  it('closes a connection whose request never ends once the drain is over, and exits 0', async () => {
    const { run, port } = await startCrmSync()
    const { closed } = await unfinishedRequest(port)
    const signalled = Date.now()
    run.child.kill('SIGTERM')
    // requests under way get 10 s (twice a delivery's budget for being stored); then it is cut
    const exit = await settledWithin(run.exited, 20_000)
    expect(exit, run.output()).toEqual({ status: 'fulfilled', value: 0 })
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(9_500)
    expect(await settledWithin(closed, 1_000)).toMatchObject({ status: 'fulfilled' })
    expect(run.output()).toContain('"connections":1,"msg":"closed connections whose requests had not ended"')
    expect(run.output()).toContain('"msg":"stopped"')
  }, 60_000)

  it('closes every connection at SHUTDOWN_TIMEOUT_SECONDS and exits 1', async () => {
    const { run, port } = await startCrmSync({ SHUTDOWN_TIMEOUT_SECONDS: '4' })
    const { closed } = await unfinishedRequest(port)
    const signalled = Date.now()
    run.child.kill('SIGTERM')
    const exit = await settledWithin(run.exited, 10_000)
    expect(exit, run.output()).toEqual({ status: 'fulfilled', value: 1 })
    expect(Date.now() - signalled).toBeLessThan(6_000)
    expect(await settledWithin(closed, 1_000)).toMatchObject({ status: 'fulfilled' })
    expect(run.output()).toMatch(/"unfinished":\["http"\].*the shutdown reached its deadline/)
  }, 60_000)

  it('ends by its deadline with exit 1 when a worker is stuck on the database', async () => {
    const { run } = await startCrmSync({ SHUTDOWN_TIMEOUT_SECONDS: '4' })
    // The inbox locked: the delivery workers' next look at it waits, and so would their stop.
    const blocker = new pg.Client({ connectionString: database.url })
    await blocker.connect()
    await blocker.query('begin')
    await blocker.query('lock table sync.inbox in access exclusive mode')
    try {
      await waitForLockWaiter(database.db, 'a delivery worker to wait for the inbox', 'sync.inbox')
      const signalled = Date.now()
      run.child.kill('SIGTERM')
      const exit = await settledWithin(run.exited, 10_000)
      expect(exit, run.output()).toEqual({ status: 'fulfilled', value: 1 })
      expect(Date.now() - signalled).toBeLessThan(6_000)
      expect(run.output()).toMatch(/"unfinished":\["workers","database"\]/)
    } finally {
      await blocker.query('rollback')
      await blocker.end()
    }
  }, 60_000)
})

describe('a stopping crm-sync with an upstream that never answers', () => {
  it("cuts off the activity poll's request, and exits 0 well before its deadline", async () => {
    // A CRM that takes every connection and never answers: the poll's request would wait 30 s.
    const asked: string[] = []
    const silent = net.createServer((socket) => {
      sockets.push(socket)
      socket.on('error', () => {})
      socket.on('data', (chunk) => asked.push(String(chunk).split('\r\n')[0] ?? ''))
    })
    silent.listen(0, '127.0.0.1')
    await once(silent, 'listening')
    const { port: crmPort } = silent.address() as net.AddressInfo
    // A database of its own: the earlier tests' processes may still hold the feed's lease here.
    const own = await createTestDatabase({ empty: true })
    try {
      const { run } = await startCrmSync({
        DATABASE_URL: own.url,
        CRM_BASE_URL: `http://127.0.0.1:${crmPort}`,
        UPSTREAM_TIMEOUT_SECONDS: '30',
        SHUTDOWN_TIMEOUT_SECONDS: '20',
      })
      await waitFor(
        // Newest first by created_at: the feed's poll (a sweep of the log orders by updated_at).
        async () =>
          asked.some((line) => line.startsWith('GET /api/activities') && line.includes('created_at-desc'))
            ? true
            : undefined,
        20_000,
        'the activity poll to ask the silent CRM',
      )
      run.child.kill('SIGTERM')
      // Waiting for the request's timeout would pass the deadline: exit 1, "unfinished".
      const exit = await settledWithin(run.exited, 25_000)
      expect(exit, run.output()).toEqual({ status: 'fulfilled', value: 0 })
      expect(run.output()).toContain('"msg":"stopped"')
      expect(run.output()).not.toContain('poll failed')
    } finally {
      silent.close()
      await dropTestDatabase(own)
    }
  }, 60_000)
})

describe('HOST and METRICS_REQUIRE_TOKEN', () => {
  it('listens on HOST only, and asks for the admin token on /metrics', async () => {
    const { run, port } = await startCrmSync({
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      METRICS_REQUIRE_TOKEN: 'true',
    })
    expect(run.output()).toContain(`"port":${port},"host":"127.0.0.1","msg":"listening"`)
    expect(await connects('127.0.0.1', port)).toBe(true)
    expect(await connects('::1', port)).toBe(false)

    const anonymous = await fetch(`http://127.0.0.1:${port}/metrics`)
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="crm-sync metrics"')
    expect(await anonymous.json()).toEqual({
      error: 'unauthorized: send Authorization: Bearer <ADMIN_TOKEN>',
    })
    const wrong = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: 'Bearer not-the-admin-token-0123' },
    })
    expect(wrong.status).toBe(401)
    await wrong.body?.cancel()
    const scraper = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
    expect(scraper.status).toBe(200)
    expect(await scraper.text()).toContain('crm_sync_inbox_depth')
    // /healthz stays open for the container's health check
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)

    run.child.kill('SIGTERM')
    expect(await settledWithin(run.exited, 20_000)).toEqual({ status: 'fulfilled', value: 0 })
  }, 60_000)

  it('listens on every interface without HOST, /metrics open', async () => {
    const { run, port } = await startCrmSync()
    expect(await connects('127.0.0.1', port)).toBe(true)
    expect(await connects('::1', port)).toBe(true)
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`)
    expect(metrics.status).toBe(200)
    await metrics.body?.cancel()
    run.child.kill('SIGTERM')
    expect(await settledWithin(run.exited, 20_000)).toEqual({ status: 'fulfilled', value: 0 })
  }, 60_000)
})
