// `crm-sync start` registers hooks when PUBLIC_URL is set and /readyz reports it; `crm-sync hooks`
// registers, lists (secret masked, failures shown) and removes them. Against the sandbox.
import { chmod, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { freePort } from '../../src/database/free-port.ts'
import { createTestDatabase, dropTestDatabase, type TestDatabase } from '../support/database.ts'
import { runCli, waitFor } from '../support/process.ts'

const SECRET = 'cli-secret-0123456789abcdef'
let sandbox: Sandbox
let database: TestDatabase
let env: Record<string, string>
const ADMIN_TOKEN = 'admin-token-0123456789'
let cwd: string

beforeAll(async () => {
  sandbox = await startSandbox({ behaviour: { crmRateLimit: null } })
  database = await createTestDatabase()
  cwd = await mkdtemp(join(tmpdir(), 'crm-sync-hooks-'))
  await chmod(cwd, 0o755)
  env = {
    CRM_BASE_URL: sandbox.crmUrl,
    CRM_API_KEY: sandbox.crmApiKey,
    DATABASE_URL: database.url,
    PUBLIC_URL: 'https://sync.example.com',
    WEBHOOK_SECRET: SECRET,
    ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
  }
})
afterAll(async () => {
  await sandbox?.stop()
  if (database) await dropTestDatabase(database)
})

async function cli(args: string[], extra: Record<string, string> = {}) {
  const run = runCli(args, { cwd, env: { ...env, ...extra } })
  const code = await run.exited
  return { code, output: run.output() }
}

describe('crm-sync hooks', () => {
  it('registers, lists and removes its hooks', async () => {
    const registered = await cli(['hooks', 'register', '--json'])
    expect(registered.code).toBe(0)
    expect(JSON.parse(registered.output.trim().split('\n').at(-1) as string)).toMatchObject({
      created: 12,
      deleted: 0,
    })

    const listed = await cli(['hooks', 'list', '--json'])
    expect(listed.code).toBe(0)
    const hooks = JSON.parse(listed.output.trim().split('\n').at(-1) as string) as Record<string, unknown>[]
    expect(hooks).toHaveLength(12)
    expect(hooks[0]).toMatchObject({ owner: 'crm-sync', object_type: 'lean', failed: 0 })
    expect(listed.output).not.toContain(SECRET)
    expect(listed.output).toContain('/webhooks/crm/***/')

    const removed = await cli(['hooks', 'remove'])
    expect(removed.code).toBe(0)
    expect(removed.output).toContain('12 removed')
    expect(sandbox.control.crm.hooks()).toHaveLength(0)
  })

  it('refuses to register without PUBLIC_URL', async () => {
    const result = await cli(['hooks', 'register'], { PUBLIC_URL: '', WEBHOOK_SECRET: '' })
    expect(result.code).toBe(2)
    expect(result.output).toContain('needs PUBLIC_URL')
  })
})

describe('crm-sync start with PUBLIC_URL', () => {
  it('registers the hooks and reports them in /readyz', async () => {
    const port = await freePort()
    const run = runCli(['start'], { cwd, env: { ...env, PORT: String(port) } })
    try {
      const body = await waitFor(
        async () => {
          // The reports quote upstream answers: only the admin token sees them.
          const response = await fetch(`http://127.0.0.1:${port}/readyz`, {
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
          const json = (await response.json()) as { reports: { hooks: { state: string } } }
          return response.status === 200 && json.reports.hooks.state === 'registered' ? json : undefined
        },
        20_000,
        'hooks registered',
      )
      expect(body.reports.hooks).toMatchObject({ state: 'registered', created: 12 })
      expect(sandbox.control.crm.hooks()).toHaveLength(12)
    } finally {
      run.child.kill('SIGTERM')
      expect(await run.exited).toBe(0)
    }
  })
})
