// Engines against the sandbox: the environment `npm start` would be given, and engine processes with
// the Node flags `npm start` gives them.
import { NODE_FLAGS } from '../../bin/node-flags.js'
import type { Sandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { type Child, spawnChild } from './child.ts'

/** Where the upstream services are: a sandbox in this process or in another one. */
export type Upstream = Pick<Sandbox, 'crmUrl' | 'crmApiKey' | 'reservationUrl' | 'reservationApiKey'>

export const BENCH_SECRET = 'bench-secret-0123456789abcdef'

export interface EngineOptions {
  databaseUrl: string
  /** Registers the hooks with the sandbox under this engine's URL (one engine per database only). */
  hooks?: boolean
  env?: Record<string, string>
  /** Flags for the engine's Node, after those of `crm-sync start` (the last of a flag wins). */
  nodeOptions?: string[]
  /**
   * Whether the engine's Node gets the V8 flags `crm-sync start` runs with (bin/node-flags.js), as
   * users run it; false: Node's defaults. Default true.
   */
  startFlags?: boolean
}

export interface EngineProcess extends Child<{ port: number }> {
  url: string
}

/** The environment of an engine against the sandbox; full reconciliation only on 1 January. */
export function engineEnv(sandbox: Upstream, port: number, options: EngineOptions): Record<string, string> {
  return {
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    RESERVATION_BASE_URL: sandbox.reservationUrl,
    RESERVATION_API_KEY: sandbox.reservationApiKey,
    DATABASE_URL: options.databaseUrl,
    PORT: String(port),
    WEBHOOK_SECRET: BENCH_SECRET,
    LOG_LEVEL: 'warn',
    FULL_SYNC_CRON: '0 3 1 1 *',
    ...(options.hooks ? { PUBLIC_URL: `http://127.0.0.1:${port}` } : {}),
    ...options.env,
  }
}

export async function spawnEngine(sandbox: Upstream, options: EngineOptions): Promise<EngineProcess> {
  const port = await freePort()
  const child = await spawnChild<{ port: number }>(
    new URL('./engine-process.ts', import.meta.url),
    engineEnv(sandbox, port, options),
    [...(options.startFlags === false ? [] : NODE_FLAGS), ...(options.nodeOptions ?? [])],
  )
  return { ...child, url: `http://127.0.0.1:${child.ready.port}` }
}
