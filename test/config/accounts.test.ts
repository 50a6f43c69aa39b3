import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  ACCOUNT_NAME,
  type AccountSettings,
  parseAccounts,
  readAccountsFile,
} from '../../src/config/accounts.ts'
import { accountSchemas } from '../../src/store/account-schemas.ts'

const env = {
  NORTH_CRM_KEY: 'north-crm-key-1',
  NORTH_RES_KEY: 'north-res-key-1',
  NORTH_WEBHOOK_SECRET: 'north-webhook-secret-0001',
  NORTH_WEBHOOK_SECRET_OLD: 'north-webhook-secret-0000',
}
const files: Record<string, string> = {
  '/run/secrets/south_crm': '  south-crm-key-1\n',
  '/run/secrets/short': 'f1le-k3\n',
  '/run/secrets/empty': ' \n',
}

/** A readFile over `files`, failing as fs does for any other path. */
function readFile(path: string): string {
  const content = files[path]
  if (content !== undefined) return content
  throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' })
}

const parse = (text: string, environment: Record<string, string | undefined> = env) =>
  parseAccounts(text, environment, readFile)

const yaml = `
accounts:
  north:
    crm: { base_url: https://north.example.com/, api_key_env: NORTH_CRM_KEY }
    reservation: { base_url: https://res.example.com, api_key_env: NORTH_RES_KEY, rate_limit: 20 }
    webhook_secret_env: NORTH_WEBHOOK_SECRET
    webhook_secret_previous_env: NORTH_WEBHOOK_SECRET_OLD
  south:
    crm: { base_url: https://south.example.com, api_key_file: /run/secrets/south_crm }
`

const expected: AccountSettings[] = [
  {
    name: 'north',
    schemas: accountSchemas('north'),
    crm: { baseUrl: 'https://north.example.com', apiKey: 'north-crm-key-1', rateLimit: null },
    reservation: { baseUrl: 'https://res.example.com', apiKey: 'north-res-key-1', rateLimit: 20 },
    webhookSecret: 'north-webhook-secret-0001',
    webhookSecretPrevious: 'north-webhook-secret-0000',
  },
  {
    name: 'south',
    schemas: accountSchemas('south'),
    crm: { baseUrl: 'https://south.example.com', apiKey: 'south-crm-key-1', rateLimit: null },
    reservation: null,
    webhookSecret: null,
    webhookSecretPrevious: null,
  },
]

/** One account `north` with these settings (a JSON object's members, without braces). */
const north = (members: string) => `{"accounts": {"north": {${members}}}}`
const crm = '"crm": {"base_url": "https://north.example.com", "api_key_env": "NORTH_CRM_KEY"}'

describe('parseAccounts', () => {
  it('reads YAML, with the secrets from the environment and from files (trimmed)', () => {
    expect(parse(yaml)).toEqual({ accounts: expected, problems: [] })
  })

  it('reads the same accounts from JSON', () => {
    const json = JSON.stringify({
      accounts: {
        north: {
          crm: { base_url: 'https://north.example.com/', api_key_env: 'NORTH_CRM_KEY' },
          reservation: { base_url: 'https://res.example.com', api_key_env: 'NORTH_RES_KEY', rate_limit: 20 },
          webhook_secret_env: 'NORTH_WEBHOOK_SECRET',
          webhook_secret_previous_env: 'NORTH_WEBHOOK_SECRET_OLD',
        },
        south: { crm: { base_url: 'https://south.example.com', api_key_file: '/run/secrets/south_crm' } },
      },
    })
    expect(parse(json, env)).toEqual({ accounts: expected, problems: [] })
  })

  it('takes names of a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"', () => {
    for (const name of ['a', 'north_2', `a${'b'.repeat(30)}`]) {
      expect(ACCOUNT_NAME.test(name)).toBe(true)
      expect(parse(`{"accounts": {"${name}": {${crm}}}}`).problems).toEqual([])
    }
    for (const name of ['North', '2nd', '_north', 'north-2', `a${'b'.repeat(31)}`, 'north_live']) {
      expect(ACCOUNT_NAME.test(name)).toBe(false)
      expect(parse(`{"accounts": {"${name}": {${crm}}}}`).problems).toEqual([
        `ACCOUNTS_FILE accounts.${name}: an account name must be a-z, then at most 30 of a-z, 0-9 and "_", not ending in "_live"`,
      ])
    }
  })

  it('names every problem of the file at once, by its path, and returns no accounts', () => {
    const text = `
accounts:
  north:
    crm: { base_url: ftp://north.example.com, api_key_env: NORTH_CRM_KEY, rate_limit: 0 }
    reservation: { base_url: https://res.example.com, api_key_env: UNSET_KEY, api_key_file: /x }
    webhook_secret_previous_env: NORTH_WEBHOOK_SECRET_OLD
    colour: blue
  south:
    crm: { base_url: https://south.example.com, api_key_env: lower_case }
  west:
    reservation: { base_url: https://res.example.com, api_key_file: /run/secrets/missing }
  east:
    crm: { base_url: https://east.example.com, api_key_env: UNSET_KEY }
`
    expect(parse(text)).toEqual({
      accounts: [],
      problems: [
        'ACCOUNTS_FILE accounts.north.crm.base_url: must be an http(s) URL',
        'ACCOUNTS_FILE accounts.north.crm.rate_limit: must be at least 1',
        'ACCOUNTS_FILE accounts.north.colour: is not a known key',
        'ACCOUNTS_FILE accounts.north.reservation: set api_key_env or api_key_file, not both',
        'ACCOUNTS_FILE accounts.north.webhook_secret_previous_env: needs webhook_secret_env or webhook_secret_file',
        'ACCOUNTS_FILE accounts.south.crm.api_key_env: must be the name of an environment variable (A-Z, 0-9 and "_")',
        'ACCOUNTS_FILE accounts.west.crm: is required',
        'ACCOUNTS_FILE accounts.west.reservation.api_key_file: /run/secrets/missing does not exist',
        'ACCOUNTS_FILE accounts.east.crm.api_key_env: UNSET_KEY is not set',
      ],
    })
  })

  it('never repeats a secret in its problems', () => {
    const secrets = {
      SHORT_KEY: 'k3y-s3v',
      SPACED_KEY: 'spaced key value',
      PLUS_SECRET: 'secret+with+plus+signs',
      SAME_SECRET: 'same-secret-as-previous',
      SHARED_KEY: 'shared-crm-key-1',
    }
    const text = `
accounts:
  a:
    crm: { base_url: https://a.example.com, api_key_env: SHORT_KEY }
    reservation: { base_url: https://res.example.com, api_key_file: /run/secrets/short }
    webhook_secret_env: PLUS_SECRET
  b:
    crm: { base_url: https://b.example.com, api_key_env: SPACED_KEY }
    webhook_secret_env: SAME_SECRET
    webhook_secret_previous_env: SAME_SECRET
  c:
    crm: { base_url: https://shared.example.com, api_key_env: SHARED_KEY }
  d:
    crm: { base_url: https://SHARED.example.com/, api_key_env: SHARED_KEY }
`
    const { problems } = parse(text, secrets)
    expect(problems).toEqual([
      'ACCOUNTS_FILE accounts.a.crm.api_key_env: the value of SHORT_KEY must be at least 8 characters',
      'ACCOUNTS_FILE accounts.a.reservation.api_key_file: the content of /run/secrets/short must be at least 8 characters',
      'ACCOUNTS_FILE accounts.a.webhook_secret_env: the value of PLUS_SECRET may contain only letters, digits, "-" and "_" (it becomes part of a URL)',
      'ACCOUNTS_FILE accounts.b.crm.api_key_env: the value of SPACED_KEY may not contain spaces or other whitespace',
      'ACCOUNTS_FILE accounts.b.webhook_secret_previous_env: must differ from the current webhook secret',
      'ACCOUNTS_FILE accounts c and d mirror the same CRM account with the same key',
    ])
    for (const secret of [...Object.values(secrets), 'f1le-k3']) {
      for (const problem of problems) expect(problem).not.toContain(secret)
    }
  })

  it('refuses two accounts on one CRM even with different keys, and allows a shared webhook secret', () => {
    const other = '"crm": {"base_url": "https://north.example.com/", "api_key_env": "NORTH_RES_KEY"}'
    const secret = '"webhook_secret_env": "NORTH_WEBHOOK_SECRET"'
    const text = `{"accounts": {"north": {${crm}, ${secret}}, "south": {${other}, ${secret}}}}`
    expect(parse(text).problems).toEqual([
      'ACCOUNTS_FILE accounts north and south mirror the same CRM (base_url): give each CRM account one entry',
    ])
    const elsewhere = other.replace('north.example.com', 'south.example.com')
    const apart = `{"accounts": {"north": {${crm}, ${secret}}, "south": {${elsewhere}, ${secret}}}}`
    expect(parse(apart).accounts.map((account) => account.name)).toEqual(['north', 'south'])
  })

  it('counts a variable set empty as unset', () => {
    expect(parse(north(crm), { NORTH_CRM_KEY: '' }).problems).toEqual([
      'ACCOUNTS_FILE accounts.north.crm.api_key_env: NORTH_CRM_KEY is not set',
    ])
  })

  it('names an empty secret file, and requires a key', () => {
    const empty = '"crm": {"base_url": "https://north.example.com", "api_key_file": "/run/secrets/empty"}'
    expect(parse(north(empty)).problems).toEqual([
      'ACCOUNTS_FILE accounts.north.crm.api_key_file: /run/secrets/empty is empty',
    ])
    expect(parse(north('"crm": {"base_url": "https://north.example.com"}')).problems).toEqual([
      'ACCOUNTS_FILE accounts.north.crm: needs api_key_env or api_key_file',
    ])
  })

  it('names unknown keys at every level', () => {
    const text = `{"acounts": {}, "accounts": {"north": {"crm": {"base_url": "https://n.example.com", "api_key_env": "NORTH_CRM_KEY", "apikey": "x"}}}}`
    expect(parse(text).problems).toEqual([
      'ACCOUNTS_FILE acounts: is not a known key',
      'ACCOUNTS_FILE accounts.north.crm.apikey: is not a known key',
    ])
  })

  it('needs at least one account', () => {
    expect(parse('accounts: {}').problems).toEqual(['ACCOUNTS_FILE accounts: must name at least one account'])
    expect(parse('').problems).toEqual(['ACCOUNTS_FILE must be a mapping with the key accounts'])
    expect(parse('accounts:').problems).toEqual(['ACCOUNTS_FILE accounts: must be a mapping'])
  })

  it('names a syntax error by line and column, without the line', () => {
    const text =
      'accounts:\n  north:\n    crm: { base_url: https://north.example.com\n  south-secret-text: x\n'
    const { accounts, problems } = parse(text)
    expect(accounts).toEqual([])
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/^ACCOUNTS_FILE line 4, column \d+: \S/)
    expect(problems[0]).not.toContain('south-secret-text')
    expect(parse('accounts:\n  north: 1\n  north: 2\n').problems).toEqual([
      'ACCOUNTS_FILE line 3, column 3: Map keys must be unique',
    ])
  })
})

describe('readAccountsFile', () => {
  it('reads the file, and a relative *_file beside it', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'crm-sync-accounts-'))
    await writeFile(join(folder, 'north.key'), 'north-file-key-1\n')
    const text =
      'accounts:\n  north:\n    crm: { base_url: https://n.example.com, api_key_file: north.key }\n'
    await writeFile(join(folder, 'accounts.yaml'), text)
    const { accounts, problems } = readAccountsFile(join(folder, 'accounts.yaml'), {})
    expect(problems).toEqual([])
    expect(accounts[0]?.crm).toEqual({
      baseUrl: 'https://n.example.com',
      apiKey: 'north-file-key-1',
      rateLimit: null,
    })
  })

  it('names a missing file as the one problem', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'crm-sync-accounts-')), 'absent.yaml')
    expect(readAccountsFile(path, env)).toEqual({
      accounts: [],
      problems: [`ACCOUNTS_FILE ${path} does not exist`],
    })
  })
})
