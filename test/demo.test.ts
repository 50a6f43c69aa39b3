// `npm run demo` on a machine with nothing configured: a small seed, a short stream of changes under
// faults; it must converge, print its summary and example queries, exit 0 and leave nothing behind.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../', import.meta.url))

function demo(args: string[]) {
  // Nothing of the developer's environment: no CRM_*, no DATABASE_URL.
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
  const child = spawn(process.execPath, ['demo/main.ts', ...args], { cwd: ROOT, env })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  )
}

describe('npm run demo', () => {
  it('converges after changes under faults, prints the summary, exits 0 and cleans up', async () => {
    const { code, stdout, stderr } = await demo([
      '--seed',
      '20',
      '--changes',
      '20',
      '--seconds',
      '3',
      '--timeout',
      '120',
    ])
    expect(code, `${stdout}\n${stderr}`).toBe(0)
    expect(stdout).toMatch(/^First sync: /m)
    expect(stdout).toMatch(/^ {2}in sync again after \d+ s$/m)
    expect(stdout).toMatch(/^ {2}first sync: \d+ s and \d+ API requests/m)
    expect(stdout).toMatch(
      /^ {2}20 changes under faults: the mirror matched the sandbox again \d+ s after the last one$/m,
    )
    expect(stdout).toMatch(/^crm\.people\s+\d+\s+\d+$/m)
    expect(stdout).toMatch(/^crm\.tags\s+\d+\s+-$/m)
    expect(stdout).toMatch(/^ {2}sent by the CRM: \d+; \d+ dropped/m)
    expect(stdout).toMatch(/^ {2}CRM: \d+ requests/m)
    for (const query of ['-- 1. Deal pipeline', '-- 2. The most used tags', '-- 3. Guests per contact']) {
      expect(stdout).toContain(query)
    }
    expect(stdout).toMatch(/^current_state\s+deals\s+value$/m)
    const folder = /embedded PostgreSQL in (\S+)/.exec(stdout)?.[1]
    expect(folder && existsSync(folder)).toBe(false)
  }, 180_000)

  it('explains itself with --help and refuses a bad option', async () => {
    const help = await demo(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: npm run demo')
    const bad = await demo(['--seed', 'many'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--seed must be a whole number')
  })
})
