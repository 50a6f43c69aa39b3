// The sandbox of one account of ACCOUNTS_FILE in a process of its own, so that rendering the answers of
// many sandboxes does not take the CPU of the process that measures. Changes, hooks and counters go
// through the sandbox's own control API (`/__sandbox` on its CRM URL, outside the latency and the
// budget, which gate `/api` only); what cannot go over it, the mirror compared with the sandbox's truth
// (sandbox/mirror-truth.ts reads the sandbox in memory), is done here, on a port of its own:
// `POST /compare {"databaseUrl", "account"}` compares the account's schemas of that database.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BehaviourPatch, Counters, FaultsPatch, SeedCount } from '../../sandbox/index.ts'
import { startSandbox } from '../../sandbox/index.ts'
import { compareMirror, describe, type TableTruth } from '../../sandbox/mirror-truth.ts'
import { accountSchemas, forAccount } from '../../src/store/account-schemas.ts'
import { createDb, createPool } from '../../src/store/database.ts'
import { type Child, childOptions, serveChild, spawnChild } from './child.ts'
import type { Upstream } from './engines.ts'

export interface AccountSandboxOptions {
  seed: number
  seedSize: SeedCount
  crmApiKey: string
  reservationApiKey: string
  behaviour?: BehaviourPatch
  faults?: FaultsPatch
}

export interface MirrorComparison {
  /** Records of every compared table upstream, and those the mirror holds as the sandbox does. */
  upstream: number
  inSync: number
  /** Rows live in the mirror and deleted upstream. */
  stale: number
  /** Records (and stale rows) that differ, in all tables. */
  differing: number
  /** The first differences, as lines. */
  differences: string[]
}

export interface AccountSandbox extends Child<Upstream & { compareUrl: string }> {
  /** `control.crm.update(collection, id, fields)` of the sandbox: the change, with its webhook. */
  update(collection: 'people', id: number, fields: Record<string, unknown>): Promise<void>
  liveIds(collection: 'people'): Promise<number[]>
  /** The hooks registered with the CRM, as its control API shows them. */
  hooks(): Promise<{ target_url: string }[]>
  counters(): Promise<Counters>
  /** The mirror in the schemas of `account` of the database at `databaseUrl` against this sandbox. */
  compare(databaseUrl: string, account: string): Promise<MirrorComparison>
}

async function json<T>(response: Response, what: string): Promise<T> {
  if (!response.ok) throw new Error(`${what}: ${response.status} ${await response.text()}`)
  return (await response.json()) as T
}

export async function spawnAccountSandbox(options: AccountSandboxOptions): Promise<AccountSandbox> {
  const child = await spawnChild<Upstream & { compareUrl: string }>(new URL(import.meta.url), options)
  const control = `${child.ready.crmUrl}/__sandbox`
  return {
    ...child,
    async update(collection, id, fields) {
      await json(
        await fetch(`${control}/crm/${collection}/${id}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(fields),
        }),
        `update ${collection} ${id}`,
      )
    },
    async liveIds(collection) {
      return (await json<{ live: number[] }>(await fetch(`${control}/crm/${collection}`), 'ids')).live
    },
    async hooks() {
      return json(await fetch(`${control}/crm/hooks`), 'hooks')
    },
    async counters() {
      return json(await fetch(`${control}/counters`), 'counters')
    },
    async compare(databaseUrl, account) {
      return json(
        await fetch(`${child.ready.compareUrl}/compare`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ databaseUrl, account }),
        }),
        `compare ${account}`,
      )
    },
  }
}

const summarise = (tables: readonly TableTruth[]): MirrorComparison => ({
  upstream: tables.reduce((sum, table) => sum + table.upstream, 0),
  inSync: tables.reduce((sum, table) => sum + table.inSync, 0),
  stale: tables.reduce((sum, table) => sum + table.stale, 0),
  differing: tables.reduce((sum, table) => sum + (table.upstream - table.inSync) + table.stale, 0),
  differences: describe(tables, 10),
})

// Run as a child (spawnChild passes its options as the one argument).
if (process.argv[1] === new URL(import.meta.url).pathname) {
  await serveChild(async () => {
    const options = childOptions<AccountSandboxOptions>()
    const sandbox = await startSandbox(options)
    const compare = async (databaseUrl: string, account: string) => {
      const pool = createPool(databaseUrl, { max: 1, applicationName: 'crm-sync:bench' })
      pool.on('error', () => {})
      const db = forAccount(createDb(pool), accountSchemas(account))
      try {
        return summarise(await compareMirror(db, sandbox))
      } finally {
        await db.destroy()
      }
    }
    const server = createServer((request, response) => {
      if (request.method !== 'POST' || request.url !== '/compare') {
        response.writeHead(404).end()
        return
      }
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const { databaseUrl, account } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          databaseUrl: string
          account: string
        }
        compare(databaseUrl, account).then(
          (result) =>
            response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result)),
          (error: unknown) => response.writeHead(500).end(String(error)),
        )
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    return {
      ready: {
        crmUrl: sandbox.crmUrl,
        crmApiKey: sandbox.crmApiKey,
        reservationUrl: sandbox.reservationUrl,
        reservationApiKey: sandbox.reservationApiKey,
        compareUrl: `http://127.0.0.1:${port}`,
      },
      async stop() {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
        await sandbox.stop()
      },
    }
  })
}
