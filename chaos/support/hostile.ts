// The hostile client: a catalogue of requests no CRM sends (wrong secrets, oversized and malformed
// bodies, unknown models, wrong methods, admin routes without a token, huge headers) with the answers
// the contract gives them, sent with node:http so that methods, lengths and chunking are exactly as
// written; and slow clients that open a request and never finish it.
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import { webhookPath } from '../../src/receiver/app.ts'
import { CHAOS_ADMIN_TOKEN, CHAOS_SECRET } from './engine.ts'

export interface HostileRequest {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Buffer
  /** Sends the body with Transfer-Encoding: chunked (no length announced). */
  chunked?: boolean
}

export interface RequestKind {
  name: string
  /** Share of the requests of this kind. */
  weight: number
  /** Answers the contract gives it (503 is always allowed: the engine may shed load). */
  expect: number[]
  /** A 400 of this kind must leave a `rejected` row in the inbox that carries the token. */
  kept?: boolean
  build(token: string): HostileRequest
}

const MIB = 1024 * 1024
const hook = (model = 'person', event = 'update') =>
  webhookPath(CHAOS_SECRET, model as 'person', event as 'update')
const json = (body: string | Buffer): Pick<HostileRequest, 'headers' | 'body'> => ({
  headers: { 'content-type': 'application/json' },
  body,
})
const post = (path: string, body: string | Buffer, extra: Partial<HostileRequest> = {}): HostileRequest => ({
  method: 'POST',
  path,
  ...json(body),
  ...extra,
})
const admin = { authorization: `Bearer ${CHAOS_ADMIN_TOKEN}`, 'content-type': 'application/json' }

export const KINDS: RequestKind[] = [
  // kept in the inbox as rejected
  {
    name: 'malformed JSON',
    weight: 8,
    expect: [400],
    kept: true,
    build: (t) => post(hook(), `{"record_id": 1, "note": "${t}"`),
  },
  { name: 'not an object', weight: 4, expect: [400], kept: true, build: (t) => post(hook(), `["${t}"]`) },
  {
    name: 'model contradicting the URL',
    weight: 4,
    expect: [400],
    kept: true,
    build: (t) => post(hook(), JSON.stringify({ model: 'company', event: 'update', record_id: 1, note: t })),
  },
  {
    name: 'unknown shape',
    weight: 4,
    expect: [400],
    kept: true,
    build: (t) => post(hook(), JSON.stringify({ note: t })),
  },
  {
    name: 'no usable record id',
    weight: 4,
    expect: [400],
    kept: true,
    build: (t) => post(hook(), JSON.stringify({ model: 'person', event: 'update', record_id: -5, note: t })),
  },
  {
    name: 'nested 1,100 deep',
    weight: 2,
    expect: [400],
    kept: true,
    build: (t) => post(hook(), `{"note":"${t}","x":${'['.repeat(1100)}${']'.repeat(1100)}}`),
  },
  {
    name: 'binary garbage',
    weight: 4,
    expect: [400],
    kept: true,
    build: (t) =>
      post(hook(), Buffer.concat([Buffer.from(t), randomBytes(200)]), {
        headers: { 'content-type': 'application/octet-stream' },
      }),
  },
  // refused without a trace
  {
    name: 'wrong secret',
    weight: 10,
    expect: [401],
    build: () => post(webhookPath('not-the-secret-at-all', 'person', 'update'), '{}'),
  },
  { name: 'no secret', weight: 3, expect: [401, 404], build: () => post('/webhooks/crm', '{}') },
  {
    name: 'undecodable secret',
    weight: 3,
    expect: [401],
    build: () => post('/webhooks/crm/%E0%A4%A/person/update', '{}'),
  },
  { name: 'unknown model', weight: 5, expect: [404], build: () => post(hook('invoice'), '{"record_id":1}') },
  {
    name: 'unknown event',
    weight: 5,
    expect: [404],
    build: () => post(hook('person', 'merge'), '{"record_id":1}'),
  },
  {
    name: 'extra path segment',
    weight: 2,
    expect: [404],
    build: () => post(`${hook()}/more`, '{"record_id":1}'),
  },
  { name: 'GET a webhook', weight: 4, expect: [405], build: () => ({ method: 'GET', path: hook() }) },
  {
    name: 'PUT a webhook',
    weight: 3,
    expect: [405],
    build: () => ({ method: 'PUT', path: hook(), ...json('{}') }),
  },
  { name: 'DELETE a webhook', weight: 3, expect: [405], build: () => ({ method: 'DELETE', path: hook() }) },
  {
    name: '1.5 MiB body, length announced',
    weight: 1,
    expect: [413],
    build: () => post(hook(), Buffer.alloc(1.5 * MIB, 0x20)),
  },
  {
    name: '1.5 MiB body, chunked',
    weight: 1,
    expect: [413],
    build: () => post(hook(), Buffer.alloc(1.5 * MIB, 0x20), { chunked: true }),
  },
  {
    name: '32 KiB of headers',
    weight: 2,
    expect: [431],
    build: () => ({ method: 'POST', path: hook(), headers: { 'x-junk': 'j'.repeat(32 * 1024) }, body: '{}' }),
  },
  {
    name: 'admin without token',
    weight: 4,
    expect: [401],
    build: () => ({ method: 'GET', path: '/admin/status' }),
  },
  {
    name: 'admin resync without token',
    weight: 3,
    expect: [401],
    build: () => post('/admin/resync', '{"mode":"full"}'),
  },
  {
    name: 'admin with a wrong token',
    weight: 3,
    expect: [401],
    build: () => ({
      method: 'GET',
      path: '/admin/runs/1',
      headers: { authorization: 'Bearer wrong-token-0123456789' },
    }),
  },
  {
    name: 'admin resync, malformed body',
    weight: 2,
    expect: [400],
    build: () => post('/admin/resync', '{"mode":', { headers: admin }),
  },
  {
    name: 'admin resync, unknown resource',
    weight: 2,
    expect: [400],
    build: () => post('/admin/resync', '{"resources":["crm.nope"]}', { headers: admin }),
  },
  {
    name: 'admin run id not a number',
    weight: 2,
    expect: [400],
    build: () => ({ method: 'GET', path: '/admin/runs/abc', headers: admin }),
  },
  {
    name: 'admin run id out of range',
    weight: 2,
    expect: [400, 404],
    build: () => ({ method: 'GET', path: '/admin/runs/99999999999999999999', headers: admin }),
  },
  { name: 'unknown path', weight: 3, expect: [404], build: () => ({ method: 'GET', path: '/wp-login.php' }) },
]

export type Answer = number | 'unreachable' | 'timeout'

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })

/** Sends one request; resolves with its status (and body when small), whatever the server does. */
export function send(
  base: string,
  request: HostileRequest,
  timeoutMs = 15_000,
): Promise<{ status: Answer; body: string }> {
  return new Promise((resolve) => {
    let settled = false
    const done = (status: Answer, body = '') => {
      if (settled) return
      settled = true
      resolve({ status, body })
    }
    const body = request.body === undefined ? undefined : Buffer.from(request.body)
    const headers: Record<string, string> = { ...request.headers }
    if (body && !request.chunked) headers['content-length'] = String(body.length)
    const outgoing = http.request(`${base}${request.path}`, { method: request.method, headers, agent })
    outgoing.setTimeout(timeoutMs, () => {
      outgoing.destroy()
      done('timeout')
    })
    outgoing.on('response', (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.length < 4 && chunks.push(chunk))
      response.on('end', () => done(response.statusCode ?? 0, Buffer.concat(chunks).toString().slice(0, 500)))
      response.on('error', () => done(response.statusCode ?? 0))
    })
    // The server may answer (413) and close before the body is all written: the answer counts.
    outgoing.on('error', () => setTimeout(() => done('unreachable'), 50))
    if (body && request.chunked) {
      for (let at = 0; at < body.length; at += 64 * 1024) outgoing.write(body.subarray(at, at + 64 * 1024))
      outgoing.end()
    } else outgoing.end(body)
  })
}

export interface SlowClient {
  kind: 'unfinished headers' | 'unfinished body' | 'hung up mid-body'
  /** What the server answered on that socket before closing it, if anything. */
  status(): number | null
  /** Resolves with the seconds until the connection ended (whoever ended it). */
  closed: Promise<number>
  destroy(): void
}

/** A client that starts a delivery and never finishes it (or hangs up in the middle of its body). */
export function slowClient(port: number, kind: SlowClient['kind']): SlowClient {
  const started = Date.now()
  const socket = net.connect(port, '127.0.0.1')
  let status: number | null = null
  socket.on('error', () => {})
  socket.on('data', (chunk: Buffer) => {
    const match = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString())
    if (match && status === null) status = Number(match[1])
  })
  socket.on('connect', () => {
    const head = `POST ${hook()} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n`
    if (kind === 'unfinished headers') socket.write(head)
    else {
      socket.write(`${head}Content-Length: 1000\r\n\r\n{"record_id": 1, "pad": "`)
      if (kind === 'hung up mid-body') setTimeout(() => socket.destroy(), 1_000)
    }
  })
  const closed = new Promise<number>((resolve) =>
    socket.on('close', () => resolve((Date.now() - started) / 1000)),
  )
  return { kind, status: () => status, closed, destroy: () => socket.destroy() }
}
