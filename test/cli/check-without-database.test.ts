// `crm-sync check` with a database it cannot use still checks what needs none (both keys, the hooks,
// PUBLIC_URL), one line each, and exits 1 for the database.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { cli, removeWorkdirs, workdir } from './run.ts'

interface CheckJson {
  checks: { check: string; outcome: string; detail: string }[]
}

let sandbox: Sandbox
let cwd: string

beforeAll(async () => {
  sandbox = await startSandbox({ seedSize: 5, behaviour: { crmRateLimit: null, reservationRateLimit: null } })
  cwd = await workdir()
})
afterAll(async () => {
  await sandbox?.stop()
  await removeWorkdirs()
})

const env = (databaseUrl: string) => ({
  CRM_BASE_URL: sandbox.crmUrl,
  CRM_API_KEY: sandbox.crmApiKey,
  RESERVATION_BASE_URL: sandbox.reservationUrl,
  RESERVATION_API_KEY: sandbox.reservationApiKey,
  DATABASE_URL: databaseUrl,
  PUBLIC_URL: 'http://127.0.0.1:9', // nothing listens there: no crm-sync started, no hooks registered
  WEBHOOK_SECRET: 'check-secret-0123456789abcdef',
})

async function checkWith(databaseUrl: string) {
  const { code, stdout } = await cli(['check', '--json'], env(databaseUrl), cwd)
  const { checks } = JSON.parse(stdout) as CheckJson
  return { code, checks, outcomes: checks.map((line) => `${line.outcome} ${line.check}`) }
}

describe('crm-sync check without a usable database', () => {
  it('checks the keys, the hooks and PUBLIC_URL when nothing listens at DATABASE_URL, and exits 1', async () => {
    const { code, checks, outcomes } = await checkWith('postgres://nobody:secret-password@127.0.0.1:9/none')
    expect(outcomes).toEqual(['fail database', 'ok crm', 'ok reservation', 'warn hooks', 'warn public-url'])
    expect(code).toBe(1)
    expect(checks[0]?.detail).toMatch(
      /^cannot connect to the database at 127\.0\.0\.1:9\/none: connection refused/,
    )
    expect(checks[1]?.detail).toBe(`${sandbox.crmUrl}: the key is accepted`)
    expect(checks[3]?.detail).toBe(
      '0 hooks of crm-sync point at http://127.0.0.1:9 (crm-sync start registers them)',
    )
    expect(JSON.stringify(checks)).not.toContain('secret-password')
  })

  it('checks them too when the database refuses the login', async () => {
    const serverUrl = new URL(inject('serverUrl'))
    serverUrl.username = 'no_such_role'
    const { code, checks, outcomes } = await checkWith(serverUrl.toString())
    expect(outcomes.slice(0, 3)).toEqual(['fail database', 'ok crm', 'ok reservation'])
    expect(checks[0]?.detail).toMatch(/refused the (login|password) of user no_such_role/)
    expect(code).toBe(1)
  })
})
