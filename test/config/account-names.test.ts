// readAccountNames (src/config/accounts.ts): the names of ACCOUNTS_FILE's accounts for
// `crm-sync schema --dbt`, where the accounts' keys need not be set: the file and its names are
// checked, nothing that needs a key.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readAccountNames } from '../../src/config/accounts.ts'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'crm-sync-account-names-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function names(text: string) {
  const file = join(dir, 'accounts.yaml')
  await writeFile(file, text)
  return readAccountNames(file)
}

describe('readAccountNames', () => {
  it("reads the names in the file's order, without the keys, their variables or their files", async () => {
    const text = [
      'accounts:',
      '  south:',
      '    crm: { base_url: https://south.example.com, api_key_file: /nonexistent/south }',
      '  north:',
      '    crm: { base_url: https://north.example.com, api_key_env: NORTH_CRM_KEY_UNSET }',
      '    webhook_secret_env: NORTH_WEBHOOK_SECRET_UNSET',
      '  east_2: {}',
    ].join('\n')
    expect(await names(text)).toEqual({ names: ['south', 'north', 'east_2'], problems: [] })
    expect(await names('{"accounts": {"west": {}}}')).toEqual({ names: ['west'], problems: [] })
  })

  it('names what is wrong with the file or a name, and gives no names then', async () => {
    expect(await names('accounts:\n  north: {}\n  North: {}\n  9lives: {}\n')).toEqual({
      names: [],
      problems: [
        'ACCOUNTS_FILE accounts.North: an account name must be a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"',
        'ACCOUNTS_FILE accounts.9lives: an account name must be a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"',
      ],
    })
    expect((await names('accounts:\n  north: {}\n  north: {}\n')).problems).toEqual([
      expect.stringMatching(/^ACCOUNTS_FILE line 3, column 3: .*unique/),
    ])
    expect(await names('accounts: {}\n')).toEqual({
      names: [],
      problems: ['ACCOUNTS_FILE accounts: must name at least one account'],
    })
    expect((await names('accounts:\n  north: {}\nother: 1\n')).problems).toEqual([
      'ACCOUNTS_FILE other: is not a known key',
    ])
    expect((await names('- north\n')).problems).toEqual([
      'ACCOUNTS_FILE must be a mapping with the key accounts',
    ])
    expect(readAccountNames(join(dir, 'missing.yaml'))).toEqual({
      names: [],
      problems: [`ACCOUNTS_FILE ${join(dir, 'missing.yaml')} does not exist`],
    })
  })
})
