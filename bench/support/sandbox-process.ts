// The sandbox in a process of its own, so that rendering its answers does not take the CPU of the
// process under measurement. Besides the sandbox's own URLs it serves `POST /touch/:collection` on a
// port of its own: every live record of that CRM collection is updated at once (its `updated_at`
// becomes now), so that the next sweep really has newer records to write.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type BehaviourPatch, type CrmCollection, type SeedCount, startSandbox } from '../../sandbox/index.ts'
import { type Child, childOptions, serveChild, spawnChild } from './child.ts'
import type { Upstream } from './engines.ts'

export interface SandboxProcessOptions {
  seedSize?: SeedCount
  behaviour?: BehaviourPatch
}

export interface SandboxProcess extends Child<Upstream & { controlUrl: string }> {
  /**
   * Updates every live record of `collection` (`updated_at` now, `background` "touched <round>");
   * resolves with the round (1, 2, ...).
   */
  touch(collection: CrmCollection): Promise<number>
}

export async function spawnSandbox(
  options: SandboxProcessOptions,
  nodeOptions: string[] = [],
): Promise<SandboxProcess> {
  const child = await spawnChild<Upstream & { controlUrl: string }>(
    new URL(import.meta.url),
    options,
    nodeOptions,
  )
  return {
    ...child,
    async touch(collection) {
      const response = await fetch(`${child.ready.controlUrl}/touch/${collection}`, { method: 'POST' })
      if (!response.ok) throw new Error(`touch ${collection}: ${response.status} ${await response.text()}`)
      return ((await response.json()) as { round: number }).round
    },
  }
}

// Run as a child (spawnChild passes its options as the one argument).
if (process.argv[1] === new URL(import.meta.url).pathname) {
  await serveChild(async () => {
    const options = childOptions<SandboxProcessOptions>()
    const sandbox = await startSandbox(options)
    let round = 0
    const control = createServer((request, response) => {
      const match = /^\/touch\/(\w+)$/.exec(request.url ?? '')
      if (request.method !== 'POST' || !match) {
        response.writeHead(404).end()
        return
      }
      const collection = match[1] as CrmCollection
      round++
      const ids = sandbox.control.crm.liveIds(collection)
      for (const id of ids) sandbox.control.crm.update(collection, id, { background: `touched ${round}` })
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ round, touched: ids.length }))
    })
    await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve))
    const { port } = control.address() as AddressInfo
    return {
      ready: {
        crmUrl: sandbox.crmUrl,
        crmApiKey: sandbox.crmApiKey,
        reservationUrl: sandbox.reservationUrl,
        reservationApiKey: sandbox.reservationApiKey,
        controlUrl: `http://127.0.0.1:${port}`,
      },
      async stop() {
        control.closeAllConnections()
        await new Promise<void>((resolve) => control.close(() => resolve()))
        await sandbox.stop()
      },
    }
  })
}
