// Everything the demo runs, in this one process: the sandbox (a seeded CRM and reservation service
// with real rate limits), an embedded PostgreSQL in a fresh temporary folder, and crm-sync itself,
// started as `crm-sync start` composes it, with webhooks registered at the sandbox.
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { type Config, parseConfig } from '../src/config/index.ts'
import { configSecrets, createLogger } from '../src/log.ts'
import { type Running, start } from '../src/service.ts'
import { createDb, createPool, type Db } from '../src/store/database.ts'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/store/embedded-postgres.ts'
import { freePort } from '../src/store/free-port.ts'

export interface DemoWorld {
  sandbox: Sandbox
  /** The demo's own connection to the mirror, for its progress and its report. */
  db: Db
  config: Config
  engine: Running
  databaseUrl: string
  /** The temporary folder: the PostgreSQL cluster and crm-sync's log (crm-sync.log). */
  folder: string
  logFile: string
  stop(options: { keepFolder: boolean }): Promise<void>
}

export interface WorldOptions {
  seedSize: number
  randomSeed: number
  /** Called with each step of the start, for the demo's progress. */
  step(text: string): void
}

const secret = () => randomBytes(24).toString('base64url')

export async function startWorld(options: WorldOptions): Promise<DemoWorld> {
  const folder = await mkdtemp(join(tmpdir(), 'crm-sync-demo-'))
  // PostgreSQL refuses to run as root: then embedded-postgres runs it as a user of its own, who
  // must be able to enter the folder (mkdtemp makes it private).
  await chmod(folder, 0o755)
  const stack: (() => Promise<void>)[] = []
  const unwind = async () => {
    for (const stop of stack.reverse()) await stop().catch(() => {})
  }
  try {
    options.step(
      `sandbox: ${options.seedSize} records of each resource, real rate limits (50 requests / 10 s)`,
    )
    const sandbox = await startSandbox({ seedSize: options.seedSize, seed: options.randomSeed })
    stack.push(() => sandbox.stop())

    options.step(`database: embedded PostgreSQL in ${folder}`)
    const embedded: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir: folder })
    stack.push(() => embedded.stop())

    const port = await freePort()
    const config = parseConfig({
      CRM_BASE_URL: sandbox.crmUrl,
      CRM_API_KEY: sandbox.crmApiKey,
      RESERVATION_BASE_URL: sandbox.reservationUrl,
      RESERVATION_API_KEY: sandbox.reservationApiKey,
      DATABASE_URL: embedded.url,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WEBHOOK_SECRET: secret(),
      ADMIN_TOKEN: secret(),
      // The shortest interval allowed: deliveries the sandbox drops are picked up within seconds.
      INCREMENTAL_SYNC_INTERVAL: '10',
      LOG_LEVEL: 'info',
      DATA_DIR: folder,
    })
    const logFile = join(folder, 'crm-sync.log')
    const logger = createLogger({
      level: config.logLevel,
      destination: pino.destination({ dest: logFile, sync: true }),
      secrets: configSecrets(config),
    })
    options.step(`crm-sync: http://127.0.0.1:${port}, registering its webhooks at the sandbox's CRM`)
    const engine = await start(config, logger)
    stack.push(async () => {
      await engine.stop()
    })

    const pool = createPool(embedded.url, { max: 3, applicationName: 'crm-sync:demo' })
    // Ctrl-C in a terminal reaches the PostgreSQL children too: their goodbye must not crash the demo.
    pool.on('error', () => {})
    const db = createDb(pool)
    stack.push(() => db.destroy())

    return {
      sandbox,
      db,
      config,
      engine,
      databaseUrl: embedded.url,
      folder,
      logFile,
      async stop({ keepFolder }) {
        await unwind()
        if (!keepFolder) await rm(folder, { recursive: true, force: true })
      },
    }
  } catch (error) {
    await unwind()
    await rm(folder, { recursive: true, force: true }).catch(() => {})
    throw error
  }
}
