// Test helpers: a sandbox on a manual clock, clients that speak to it over real HTTP as crm-sync
// would, and a tiny webhook receiver.
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach } from 'vitest'
import {
  type ManualClock,
  manualClock,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../sandbox/index.ts'

export interface Harness {
  sandbox: Sandbox
  clock: ManualClock
  crm: ReturnType<typeof crmClient>
  reservation: ReturnType<typeof reservationClient>
}

const running: { stop(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((item) => item.stop()))
})

/** A sandbox stopped after the test. */
export async function harness(options: SandboxOptions = {}): Promise<Harness> {
  const clock = manualClock()
  const sandbox = await startSandbox({ clock, ...options })
  running.push(sandbox)
  return { sandbox, clock, crm: crmClient(sandbox), reservation: reservationClient(sandbox) }
}

type Query = Record<string, string | number>

function withQuery(url: string, query: Query = {}): string {
  const search = new URLSearchParams(
    Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]),
  )
  const text = search.toString()
  return text ? `${url}${url.includes('?') ? '&' : '?'}${text}` : url
}

async function answer(response: Response) {
  const text = await response.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : null
  } catch {}
  // biome-ignore lint/suspicious/noExplicitAny: tests read payloads freely
  return { status: response.status, headers: response.headers, text, body: body as any }
}

export function crmClient(sandbox: Sandbox) {
  const url = (path: string, query?: Query) => withQuery(`${sandbox.crmUrl}/api/${path}`, query)
  return {
    get: async (path: string, query: Query = {}) =>
      answer(await fetch(url(path, { apikey: sandbox.crmApiKey, ...query }))),
    send: async (method: string, path: string, body: unknown) =>
      answer(
        await fetch(url(path), {
          method,
          headers: { 'content-type': 'application/json', 'x-apikey': sandbox.crmApiKey },
          body: JSON.stringify(body),
        }),
      ),
    raw: async (path: string, init: RequestInit = {}) =>
      answer(await fetch(`${sandbox.crmUrl}${path}`, init)),
  }
}

export function reservationClient(sandbox: Sandbox) {
  const headers = {
    authorization: `Token token="${sandbox.reservationApiKey}"`,
    'content-type': 'application/json',
  }
  const url = (path: string, query?: Query) => withQuery(`${sandbox.reservationUrl}/api/${path}`, query)
  return {
    get: async (path: string, query: Query = {}) => answer(await fetch(url(path, query), { headers })),
    send: async (method: string, path: string, body: unknown) =>
      answer(await fetch(url(path), { method, headers, body: JSON.stringify(body) })),
    raw: async (path: string, init: RequestInit = {}) =>
      answer(await fetch(`${sandbox.reservationUrl}${path}`, init)),
  }
}

export interface Delivery {
  path: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read payloads freely
  body: any
}

/** A webhook receiver on a free port; `status` decides the answer per delivery. */
export async function receiver(status: (request: IncomingMessage) => number = () => 200) {
  const received: Delivery[] = []
  const server = createServer((request, response) => {
    let data = ''
    request.on('data', (chunk) => {
      data += chunk
    })
    request.on('end', () => {
      received.push({ path: request.url ?? '', body: JSON.parse(data) })
      response.statusCode = status(request)
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  running.push({ stop })
  return { url, received, stop }
}

/** Registers a hook over the API, as crm-sync would. */
export async function addHook(h: Harness, fields: Record<string, unknown>) {
  const response = await h.crm.send('POST', 'hooks', { hook: fields })
  if (response.status !== 201) throw new Error(`hook not created: ${response.text}`)
  return response.body.hook as { id: number }
}
