// `npm run demo` on a machine with nothing configured: a small seed, a short stream of changes under
// faults; it must converge, print its summary and example queries, exit 0 and leave nothing behind.
// Nor may it leave its temporary folder (the embedded cluster) behind when it fails or is stopped
// by Ctrl-C or SIGTERM.
import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { demo, folderOf, startDemo as start, stopDemosAfterEach } from './run-demo.ts'

stopDemosAfterEach()

describe('npm run demo', () => {
  it('converges after changes under faults, prints the summary, exits 0 and cleans up', async () => {
    const { code, stdout, stderr } = await demo([
      '--records',
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
    const folder = folderOf(stdout)
    expect(folder && existsSync(folder)).toBe(false)
  }, 180_000)

  it("removes its temporary folder when it fails, keeping only crm-sync's log", async () => {
    // 6,000 records of each resource take the first sync well over the shortest timeout (10 s): at
    // most 50 CRM requests in 10 s, 250 records a page.
    const { code, stdout, stderr } = await demo(['--records', '6000', '--timeout', '10'])
    expect(code, `${stdout}\n${stderr}`).toBe(1)
    expect(stderr).toContain('the mirror did not match the sandbox within 10 s')
    const folder = folderOf(stdout)
    expect(folder).toBeDefined()
    expect(existsSync(folder as string)).toBe(false)
    const log = /crm-sync's log is kept in (\S+)/.exec(stderr)?.[1]
    expect(log).toBe(`${folder}.log`)
    expect(existsSync(log as string)).toBe(true)
    await rm(log as string)
  }, 180_000)

  for (const [signal, exitCode] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`removes its temporary folder when stopped by ${signal} during the changes`, async () => {
      const demo = start(['--records', '20', '--changes', '1000', '--seconds', '100'])
      const shown = await demo.printed(/^1000 changes in 100 s/m)
      expect(shown, 'the demo did not reach its changes').not.toBeNull()
      const folder = folderOf(shown?.input ?? '')
      expect(folder && existsSync(folder)).toBe(true)
      process.kill(-(demo.child.pid as number), signal)
      const { code, stdout, stderr } = await demo.exited
      expect(code, `${stdout}\n${stderr}`).toBe(exitCode)
      expect(existsSync(folder as string)).toBe(false)
      expect(stderr).toBe('')
    }, 120_000)
  }

  it('removes its temporary folder when a second Ctrl-C cuts the orderly stop short', async () => {
    const demo = start(['--records', '20', '--changes', '1000', '--seconds', '100'])
    const shown = await demo.printed(/^1000 changes in 100 s/m)
    expect(shown, 'the demo did not reach its changes').not.toBeNull()
    const folder = folderOf(shown?.input ?? '')
    expect(folder && existsSync(folder)).toBe(true)
    process.kill(-(demo.child.pid as number), 'SIGINT')
    // The second once the first is handled: two signals pending at once are delivered as one.
    expect(await demo.printed(/^stopping \(once more to stop at once\)$/m)).not.toBeNull()
    process.kill(-(demo.child.pid as number), 'SIGINT')
    const { code, stdout, stderr } = await demo.exited
    expect(code, `${stdout}\n${stderr}`).toBe(130)
    expect(stderr).toContain('crm-sync demo: stopped at once')
    expect(existsSync(folder as string)).toBe(false)
  }, 120_000)

  it('explains itself with --help and refuses a bad option', async () => {
    const help = await demo(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: npm run demo')
    const bad = await demo(['--records', 'many'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--records must be a whole number')
  })
})
