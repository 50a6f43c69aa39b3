// Everything the demo runs, in this one process: the sandbox (a seeded CRM and reservation service
// with real rate limits), an embedded PostgreSQL in a fresh temporary folder, and crm-sync itself,
// started as `crm-sync start` composes it, with webhooks registered at the sandbox.
//
// The folder (70-100 MB of cluster) never outlives the demo: stop() removes it, keeping crm-sync's
// log next to it when asked; and should the process exit without stop() (an uncaught error, a
// second Ctrl-C), an exit hook stops PostgreSQL and removes it.
import { randomBytes } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { chmod, mkdtemp, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pino from 'pino'
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { type Config, parseConfig } from '../src/config/index.ts'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/database/embedded-postgres.ts'
import { freePort } from '../src/database/free-port.ts'
import { configSecrets, createLogger } from '../src/log.ts'
import { type Running, start } from '../src/service.ts'
import { createDb, createPool, type Db } from '../src/store/database.ts'

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
  /**
   * Stops everything and removes the folder. With keepLog, crm-sync's log is first moved out of
   * it, to `<folder>.log`, and that path is returned; otherwise null.
   */
  stop(options: { keepLog: boolean }): Promise<string | null>
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
  // The exit hook cannot wait for PostgreSQL to stop, and files it writes or removes meanwhile make
  // a removal fail or stop short: it stops it at once (SIGQUIT, an immediate shutdown), then removes
  // the folder, again and again for up to 5 s until it is gone.
  let postmasterPid: number | undefined
  const removeOnExit = () => {
    try {
      if (postmasterPid !== undefined) process.kill(postmasterPid, 'SIGQUIT')
    } catch {
      // Already gone.
    }
    const pause = new Int32Array(new SharedArrayBuffer(4))
    for (let attempt = 0; attempt < 100 && existsSync(folder); attempt++) {
      if (attempt > 0) Atomics.wait(pause, 0, 0, 50)
      try {
        // A file the stopping server removes midway can end a removal early, without an error.
        rmSync(folder, { recursive: true, force: true })
      } catch {
        // One it creates midway fails it (ENOTEMPTY): again.
      }
    }
  }
  process.once('exit', removeOnExit)
  /** Removes the folder; should it still be there after a few tries, the exit hook tries again. */
  const remove = async () => {
    for (let attempt = 0; attempt < 20 && existsSync(folder); attempt++) {
      if (attempt > 0) await sleep(100)
      await rm(folder, { recursive: true, force: true }).catch(() => {})
    }
    if (!existsSync(folder)) process.removeListener('exit', removeOnExit)
  }
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
    postmasterPid = embedded.pid
    stack.push(async () => {
      await embedded.stop()
      postmasterPid = undefined
    })

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
      async stop({ keepLog }) {
        await unwind()
        let keptLog: string | null = null
        if (keepLog) {
          keptLog = `${folder}.log`
          await rename(logFile, keptLog).catch(() => {
            keptLog = null
          })
        }
        await remove()
        return keptLog
      },
    }
  } catch (error) {
    await unwind()
    await remove()
    throw error
  }
}
