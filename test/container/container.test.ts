// The container image, without Docker (no engine runs on these machines): the Dockerfile is read, its
// promises checked (Node 24 slim, production dependencies, non-root, health check, SIGTERM), and its
// install and start steps carried out by hand: the dependency stage's `npm ci` on a copy of the
// manifest, the final stage's COPYs into a fresh folder, then its ENTRYPOINT and CMD with its ENV, as
// an unprivileged user when the test runs as root. The service must answer /healthz (and the
// HEALTHCHECK command must agree), run a CLI command beside it, and stop on SIGTERM within its bound.
import { spawn } from 'node:child_process'
import { chmod, chown, cp, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'
import { environmentOf, execForm, find, readDockerfile, type Stage } from './dockerfile.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CONTAINER_APP = '/app'
// `USER node` in the image; here, when running as root, the unprivileged `nobody`.
const unprivileged = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}

let stages: Stage[]
let folder: string
let app: string
let sandbox: Sandbox
let database: TestDatabase

/** A command of the image, run with this Node 24 (the image's `node`) in the app folder. */
function spawnImage(command: string[], env: Record<string, string>) {
  const [program, ...args] = command
  expect(program).toBe('node')
  const child = spawn(process.execPath, args, {
    cwd: app,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...unprivileged,
  })
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
  })
  child.stderr.on('data', (chunk) => {
    output += chunk
  })
  let running = true
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running = false
      resolve(code)
    }),
  )
  return { child, exited, output: () => output, running: () => running }
}

function run(command: string, cwd: string): Promise<{ code: number | null; output: string }> {
  // The image's npm runs under its Node 24; so does this one.
  const env = {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '/root',
    npm_config_prefer_offline: 'true', // the cache is warm; the registry answers anything missing
  }
  const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
  })
  child.stderr.on('data', (chunk) => {
    output += chunk
  })
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })))
}

const stage = (name: string | null) => stages.find((candidate) => candidate.name === name) as Stage
const finalStage = () => stages.at(-1) as Stage

/** The image's environment, its paths below /app moved into the test's app folder. */
function imageEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environmentOf(finalStage())).map(([key, value]) => [
      key,
      value.startsWith(CONTAINER_APP) ? join(app, value.slice(CONTAINER_APP.length)) : value,
    ]),
  )
}

beforeAll(async () => {
  stages = await readDockerfile(join(ROOT, 'Dockerfile'))
  folder = await mkdtemp(join(tmpdir(), 'crm-sync-image-'))
  await chmod(folder, 0o755)
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null, reservationRateLimit: null } })
  database = await createTestDatabase({ empty: true })
})
afterAll(async () => {
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
  if (folder) await rm(folder, { recursive: true, force: true })
})

describe('the Dockerfile', () => {
  it('builds on Node 24 slim, installs production dependencies only, and runs as a user', () => {
    for (const { image } of stages) expect(image).toMatch(/^node:24(\.\d+)*(-[a-z]+)*-slim$/)
    const install = find(stage('dependencies'), 'RUN').map((instruction) => instruction.args)
    expect(install.join('\n')).toMatch(/npm ci\b.*--omit=dev/)
    const users = find(finalStage(), 'USER').map((instruction) => instruction.args)
    expect(users.at(-1)).toBe('node')
    const health = find(finalStage(), 'HEALTHCHECK')[0]
    expect(health && execForm(health.args).join(' ')).toContain('/healthz')
    expect(find(finalStage(), 'STOPSIGNAL')[0]?.args).toBe('SIGTERM')
  })
})

describe('its install and start steps, outside Docker', () => {
  it('installs from the lock without devDependencies', async () => {
    const dependencies = join(folder, 'dependencies')
    await mkdir(dependencies)
    for (const copy of find(stage('dependencies'), 'COPY')) {
      const sources = copy.args.split(/\s+/).slice(0, -1)
      for (const source of sources) await cp(join(ROOT, source), join(dependencies, source))
    }
    for (const step of find(stage('dependencies'), 'RUN')) {
      const { code, output } = await run(step.args, dependencies)
      expect(code, output).toBe(0)
    }
    const installed = await readdir(join(dependencies, 'node_modules'))
    expect(installed).toContain('pg-boss')
    expect(installed).toContain('cli-progress')
    for (const devDependency of ['vitest', 'typescript', '@biomejs', 'node', 'pino-pretty']) {
      expect(installed).not.toContain(devDependency)
    }

    app = join(folder, 'app')
    await mkdir(app)
    for (const copy of find(finalStage(), 'COPY')) {
      const [source = '', target = ''] = copy.args.split(/\s+/)
      // As Docker does: a target ending in / is a folder the source goes into.
      const destination = join(app, target, target.endsWith('/') ? basename(source) : '')
      if (copy.flags.from) {
        // from an earlier stage: that stage's /app is its folder here
        await rename(join(folder, copy.flags.from, source.replace(`${CONTAINER_APP}/`, '')), destination)
      } else {
        await cp(join(ROOT, source), destination, { recursive: true })
      }
    }
    // The final stage's RUN: the data folder for the unprivileged user, and `crm-sync` on the PATH
    // (a link to bin/crm-sync.js, run by the next test through that file).
    const [setup] = find(finalStage(), 'RUN')
    expect(setup?.args).toContain('chown node:node /app/.data')
    expect(setup?.args).toContain('ln -s /app/bin/crm-sync.js /usr/local/bin/crm-sync')
    const dataDir = imageEnvironment().DATA_DIR as string
    await mkdir(dataDir, { recursive: true })
    if (unprivileged.uid !== undefined) await chown(dataDir, unprivileged.uid, unprivileged.gid)
  }, 180_000)

  it('starts, answers /healthz and its HEALTHCHECK, runs other commands, and stops on SIGTERM', async () => {
    expect(app, 'the install step ran').toBeDefined()
    const port = await freePort()
    const env = {
      ...imageEnvironment(),
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      CRM_BASE_URL: sandbox.crmUrl,
      CRM_API_KEY: sandbox.crmApiKey,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
    }
    const entrypoint = execForm(find(finalStage(), 'ENTRYPOINT')[0]?.args ?? '[]')
    const command = execForm(find(finalStage(), 'CMD')[0]?.args ?? '[]')
    const service = spawnImage([...entrypoint, ...command], env)
    try {
      await waitFor(
        async () => {
          if (!service.running()) return false // exited: no point in waiting
          return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined
        },
        60_000,
        '/healthz',
      )
        .then((up) => {
          if (!up) throw new Error('the service exited')
        })
        .catch((error) => {
          throw new Error(`${error.message}\n${service.output()}`)
        })
      const health = execForm(find(finalStage(), 'HEALTHCHECK')[0]?.args ?? '[]')
      expect(await spawnImage(health, env).exited).toBe(0)
      await waitFor(
        async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined),
        30_000,
        '/readyz',
      )

      // `docker exec <container> crm-sync status`: the CLI's launcher, as the link on the PATH runs it
      const status = spawnImage(['node', 'bin/crm-sync.js', 'status', '--json', '--no-hooks'], env)
      expect(await status.exited, status.output()).toBe(0)
      expect(JSON.parse(status.output().trim().split('\n').at(-1) as string)).toHaveProperty('resources')

      // The simulator is a development tool: the image carries the engine only, and says so.
      const sandboxCommand = spawnImage(['node', 'bin/crm-sync.js', 'sandbox'], env)
      expect(await sandboxCommand.exited).toBe(2)
      expect(sandboxCommand.output()).toContain('npm run sandbox')
    } finally {
      const stopping = Date.now()
      service.child.kill('SIGTERM')
      expect(await service.exited, service.output()).toBe(0)
      expect(Date.now() - stopping).toBeLessThan(30_000)
    }
    expect(service.output()).toContain('"msg":"stopped"')
  }, 120_000)
})
