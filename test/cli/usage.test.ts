// The command line without a database: --help on every command, and the exit codes of mistakes
// (2 for usage and configuration), before anything is opened.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cli, removeWorkdirs, workdir } from './run.ts'

const CRM = { CRM_BASE_URL: 'http://127.0.0.1:9', CRM_API_KEY: 'k-secret-value' }
let cwd: string

beforeAll(async () => {
  cwd = await workdir()
})
afterAll(removeWorkdirs)

describe('crm-sync --help', () => {
  it('lists every command and exits 0', async () => {
    const { code, stdout } = await cli(['--help'], {}, cwd)
    expect(code).toBe(0)
    for (const name of [
      'start',
      'migrate',
      'check',
      'hooks',
      'resync',
      'runs',
      'cancel',
      'status',
      'sandbox',
    ]) {
      expect(stdout).toMatch(new RegExp(`^  ${name} `, 'm'))
    }
  })

  it.each([
    ['start', 'Usage: crm-sync start'],
    ['migrate', 'Usage: crm-sync migrate'],
    ['check', 'Usage: crm-sync check [--json]'],
    ['hooks', 'Usage: crm-sync hooks <register|list|remove>'],
    ['resync', 'Usage: crm-sync resync [--full] [--resource <name> ...] [--wait] [--json]'],
    [
      'runs',
      'Usage: crm-sync runs [--failed] [--resource <name>] [--limit <n>] [--before <run id>] [--json]',
    ],
    ['cancel', 'Usage: crm-sync cancel <run id> [--json]'],
    ['status', 'Usage: crm-sync status [--json] [--no-hooks]'],
    ['sandbox', 'Usage: crm-sync sandbox [options]'],
  ])('crm-sync %s --help needs no configuration', async (name, usage) => {
    const { code, stdout } = await cli([name, '--help'], {}, cwd)
    expect(code).toBe(0)
    expect(stdout).toContain(usage)
  })
})

describe('mistakes exit 2', () => {
  it('no command: the usage on stderr', async () => {
    const { code, stdout, stderr } = await cli([], {}, cwd)
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toContain('Usage: crm-sync <command>')
  })

  it('an unknown command', async () => {
    const { code, stderr } = await cli(['resink'], CRM, cwd)
    expect(code).toBe(2)
    expect(stderr).toContain('unknown command "resink"')
  })

  it('an unknown option, with the usage of the command', async () => {
    const { code, stderr } = await cli(['resync', '--fulll'], CRM, cwd)
    expect(code).toBe(2)
    expect(stderr).toContain("'--fulll'")
    expect(stderr).toContain('Usage: crm-sync resync')
  })

  it('--json where no command offers it', async () => {
    const { code, stderr } = await cli(['migrate', '--json'], CRM, cwd)
    expect(code).toBe(2)
    expect(stderr).toContain("'--json'")
  })

  it('an unknown hooks action', async () => {
    const { code, stderr } = await cli(['hooks', 'unregister'], CRM, cwd)
    expect(code).toBe(2)
    expect(stderr).toContain('unknown action "unregister"')
  })

  it('an invalid configuration, named without its values', async () => {
    const { code, stderr } = await cli(
      ['status'],
      { CRM_BASE_URL: 'not a url', CRM_API_KEY: 'k-secret-value' },
      cwd,
    )
    expect(code).toBe(2)
    expect(stderr).toContain('CRM_BASE_URL must be an http(s) URL')
    expect(stderr).not.toContain('k-secret-value')
  })
})
