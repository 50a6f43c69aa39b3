import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig, readEnvironment } from '../../src/config/index.ts'

const minimal = { CRM_BASE_URL: 'https://crm.example.com/', CRM_API_KEY: 'crm-key-123' }

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    parseConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('parseConfig', () => {
  it('applies the defaults of the outside contract', () => {
    const config = parseConfig(minimal)
    expect(config).toMatchObject({
      crm: { baseUrl: 'https://crm.example.com', apiKey: 'crm-key-123' },
      reservation: null,
      databaseUrl: null,
      publicUrl: null,
      webhookSecret: null,
      adminToken: null,
      port: 3000,
      hookObjectType: 'lean',
      incrementalSyncIntervalSeconds: 300,
      fullSyncCron: '0 3 * * *',
      detailsBudgetShare: 0.1,
      logLevel: 'info',
    })
  })

  it('reads every variable of the outside contract', () => {
    const config = parseConfig({
      ...minimal,
      RESERVATION_BASE_URL: 'https://reservations.example.com',
      RESERVATION_API_KEY: 'res-key-1',
      DATABASE_URL: 'postgres://user:pw@db:5432/mirror',
      PUBLIC_URL: 'https://sync.example.com',
      WEBHOOK_SECRET: 'a-secret-of-32-characters-or-so',
      ADMIN_TOKEN: 'admin-token-0123456789',
      PORT: '8080',
      HOOK_OBJECT_TYPE: 'nested',
      INCREMENTAL_SYNC_INTERVAL: '60',
      FULL_SYNC_CRON: '30 2 * * 1-5',
      DETAILS_BUDGET_PERCENT: '5',
    })
    expect(config).toMatchObject({
      detailsBudgetShare: 0.05,
      reservation: { baseUrl: 'https://reservations.example.com', apiKey: 'res-key-1' },
      databaseUrl: 'postgres://user:pw@db:5432/mirror',
      publicUrl: 'https://sync.example.com',
      port: 8080,
      hookObjectType: 'nested',
      incrementalSyncIntervalSeconds: 60,
      fullSyncCron: '30 2 * * 1-5',
    })
  })

  it('names every problem at once', () => {
    const problems = problemsOf({
      CRM_BASE_URL: 'not a url',
      PORT: 'eighty',
      HOOK_OBJECT_TYPE: 'fat',
      INCREMENTAL_SYNC_INTERVAL: '-5',
      FULL_SYNC_CRON: 'nightly',
      DATABASE_URL: 'mysql://x',
      PUBLIC_URL: 'https://sync.example.com',
      RESERVATION_BASE_URL: 'https://reservations.example.com',
      ADMIN_TOKEN: 'short',
      DETAILS_BUDGET_PERCENT: '51',
    })
    const named = problems.map((problem) => problem.split(' ')[0])
    expect(named).toEqual([
      'ADMIN_TOKEN',
      'CRM_API_KEY',
      'CRM_BASE_URL',
      'DATABASE_URL',
      'DETAILS_BUDGET_PERCENT',
      'FULL_SYNC_CRON',
      'HOOK_OBJECT_TYPE',
      'INCREMENTAL_SYNC_INTERVAL',
      'PORT',
      'RESERVATION_API_KEY',
      'WEBHOOK_SECRET',
    ])
    expect(problems).toContain('CRM_API_KEY is required')
    expect(problems).toContain('WEBHOOK_SECRET is required when PUBLIC_URL is set')
  })

  it('never repeats a value in its messages (values may be secrets)', () => {
    const secret = 'super-secret-token-value'
    const error = (() => {
      try {
        parseConfig({
          ...minimal,
          CRM_BASE_URL: secret,
          WEBHOOK_SECRET: `${secret}/with/slash`,
          PORT: secret,
        })
      } catch (caught) {
        return caught as Error
      }
    })()
    expect(error?.message).toMatch(/3 problems/)
    expect(error?.message).not.toContain(secret)
  })

  it('treats empty values as unset', () => {
    expect(parseConfig({ ...minimal, PORT: '', DATABASE_URL: '', RESERVATION_BASE_URL: '' })).toMatchObject({
      port: 3000,
      databaseUrl: null,
      reservation: null,
    })
  })

  it('refuses implausibly short keys and secrets with whitespace, naming the variable', () => {
    expect(problemsOf({ ...minimal, CRM_API_KEY: 'x', ADMIN_TOKEN: 'a token with spaces in it' })).toEqual([
      'ADMIN_TOKEN may not contain spaces or other whitespace',
      'CRM_API_KEY must be at least 8 characters',
    ])
  })

  it('keeps deliveries, runs and versions of records for days (0: for ever), refusing what is no whole number of days', () => {
    expect(parseConfig(minimal).retention).toEqual({
      inboxProcessedDays: 7,
      inboxRejectedDays: 30,
      runsDays: 90,
      historyDays: null,
    })
    expect(
      parseConfig({
        ...minimal,
        INBOX_PROCESSED_RETENTION_DAYS: '1',
        INBOX_REJECTED_RETENTION_DAYS: '0',
        RUNS_RETENTION_DAYS: '3650',
        HISTORY_RETENTION_DAYS: '365',
      }).retention,
    ).toEqual({ inboxProcessedDays: 1, inboxRejectedDays: null, runsDays: 3650, historyDays: 365 })
    expect(parseConfig({ ...minimal, HISTORY_RETENTION_DAYS: '0' }).retention.historyDays).toBeNull()
    expect(
      problemsOf({
        ...minimal,
        INBOX_PROCESSED_RETENTION_DAYS: '-1',
        INBOX_REJECTED_RETENTION_DAYS: '7.5',
        RUNS_RETENTION_DAYS: '3651',
        HISTORY_RETENTION_DAYS: 'a year',
      }),
    ).toEqual([
      'HISTORY_RETENTION_DAYS must be a whole number from 0 to 3650',
      'INBOX_PROCESSED_RETENTION_DAYS must be a whole number from 0 to 3650',
      'INBOX_REJECTED_RETENTION_DAYS must be a whole number from 0 to 3650',
      'RUNS_RETENTION_DAYS must be at most 3650',
    ])
  })

  it('requires both reservation variables or neither', () => {
    expect(problemsOf({ ...minimal, RESERVATION_API_KEY: 'res-key-1' })).toEqual([
      expect.stringMatching(/^RESERVATION_BASE_URL is required when/),
    ])
  })
})

describe('readEnvironment', () => {
  it('reads .env from the working directory; the process environment wins', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'crm-sync-env-'))
    await writeFile(join(dir, '.env'), 'CRM_API_KEY=from-file\nCRM_SYNC_TEST_ONLY_IN_FILE="quoted value"\n')
    process.env.CRM_API_KEY = 'from-process'
    try {
      const env = readEnvironment(dir)
      expect(env.CRM_SYNC_TEST_ONLY_IN_FILE).toBe('quoted value')
      expect(env.CRM_API_KEY).toBe('from-process')
    } finally {
      delete process.env.CRM_API_KEY
    }
  })
})

describe('HOST, METRICS_REQUIRE_TOKEN and SHUTDOWN_TIMEOUT_SECONDS (issue 17)', () => {
  it('listen on every interface, leave /metrics open and stop within 30 s by default', () => {
    expect(parseConfig(minimal)).toMatchObject({
      host: null,
      metricsRequireToken: false,
      shutdownTimeoutSeconds: 30,
    })
  })

  it('are read', () => {
    expect(
      parseConfig({
        ...minimal,
        HOST: '127.0.0.1',
        ADMIN_TOKEN: 'admin-token-0123456789',
        METRICS_REQUIRE_TOKEN: 'true',
        SHUTDOWN_TIMEOUT_SECONDS: '20',
      }),
    ).toMatchObject({ host: '127.0.0.1', metricsRequireToken: true, shutdownTimeoutSeconds: 20 })
    for (const host of ['0.0.0.0', '::', '::1', 'localhost', 'crm-sync.internal'])
      expect(parseConfig({ ...minimal, HOST: host }).host).toBe(host)
  })

  it('name their problems, and require ADMIN_TOKEN for a token on /metrics', () => {
    expect(
      problemsOf({
        ...minimal,
        HOST: 'http://0.0.0.0',
        METRICS_REQUIRE_TOKEN: 'yes',
        SHUTDOWN_TIMEOUT_SECONDS: '1',
      }),
    ).toEqual([
      'HOST must be an IP address (such as 127.0.0.1, 0.0.0.0 or ::) or a host name',
      'METRICS_REQUIRE_TOKEN must be true or false',
      'SHUTDOWN_TIMEOUT_SECONDS must be at least 2',
    ])
    expect(problemsOf({ ...minimal, METRICS_REQUIRE_TOKEN: 'true' })).toEqual([
      'ADMIN_TOKEN is required when METRICS_REQUIRE_TOKEN is true',
    ])
  })
})

describe('HOOKS_CHECK_INTERVAL and WEBHOOK_SECRET_PREVIOUS (issue 17)', () => {
  const hooks = { PUBLIC_URL: 'https://sync.example.com', WEBHOOK_SECRET: 'current-secret-0123456789' }

  it('check the hooks every 300 s by default, 0 turning the checks off; no previous secret', () => {
    expect(parseConfig(minimal)).toMatchObject({
      hooksCheckIntervalSeconds: 300,
      webhookSecretPrevious: null,
    })
    expect(parseConfig({ ...minimal, HOOKS_CHECK_INTERVAL: '0' }).hooksCheckIntervalSeconds).toBe(0)
    expect(parseConfig({ ...minimal, HOOKS_CHECK_INTERVAL: '60' }).hooksCheckIntervalSeconds).toBe(60)
  })

  it('read the previous secret beside the current one', () => {
    const config = parseConfig({
      ...minimal,
      ...hooks,
      WEBHOOK_SECRET_PREVIOUS: 'previous-secret-0123456789',
    })
    expect(config).toMatchObject({
      webhookSecret: 'current-secret-0123456789',
      webhookSecretPrevious: 'previous-secret-0123456789',
    })
  })

  it('name every problem of both at once, never the value', () => {
    const problems = problemsOf({
      ...minimal,
      ...hooks,
      HOOKS_CHECK_INTERVAL: '5',
      WEBHOOK_SECRET_PREVIOUS: 'short/secret',
    })
    expect(problems).toEqual([
      'HOOKS_CHECK_INTERVAL must be 0 (off) or from 10 to 86400',
      'WEBHOOK_SECRET_PREVIOUS may contain only letters, digits, "-" and "_" (it becomes part of a URL)',
      'WEBHOOK_SECRET_PREVIOUS must be at least 16 characters',
    ])
    for (const [value, problem] of [
      ['-1', 'must be a whole number from 0 to 86400'],
      ['ten', 'must be a whole number from 0 to 86400'],
      ['86401', 'must be at most 86400'],
    ])
      expect(problemsOf({ ...minimal, HOOKS_CHECK_INTERVAL: value })).toEqual([
        `HOOKS_CHECK_INTERVAL ${problem}`,
      ])
  })

  it('require WEBHOOK_SECRET with a previous secret, and a previous secret that differs from it', () => {
    expect(problemsOf({ ...minimal, WEBHOOK_SECRET_PREVIOUS: 'previous-secret-0123456789' })).toEqual([
      'WEBHOOK_SECRET is required when WEBHOOK_SECRET_PREVIOUS is set',
    ])
    expect(problemsOf({ ...minimal, ...hooks, WEBHOOK_SECRET_PREVIOUS: hooks.WEBHOOK_SECRET })).toEqual([
      'WEBHOOK_SECRET_PREVIOUS must differ from WEBHOOK_SECRET',
    ])
  })
})

describe('MIRROR_PUBLICATION (issue 21)', () => {
  it('keeps the publication crm_sync_mirror by default; another name, or off', () => {
    expect(parseConfig(minimal).mirrorPublication).toBe('crm_sync_mirror')
    expect(parseConfig({ ...minimal, MIRROR_PUBLICATION: 'warehouse_feed_2' }).mirrorPublication).toBe(
      'warehouse_feed_2',
    )
    expect(parseConfig({ ...minimal, MIRROR_PUBLICATION: 'off' }).mirrorPublication).toBeNull()
    // Empty counts as unset, as everywhere.
    expect(parseConfig({ ...minimal, MIRROR_PUBLICATION: '' }).mirrorPublication).toBe('crm_sync_mirror')
  })

  it('refuses what is no plain PostgreSQL name', () => {
    for (const value of ['Mirror', '2nd', 'crm-sync', 'a b', 'x'.repeat(64), 'OFF'])
      expect(problemsOf({ ...minimal, MIRROR_PUBLICATION: value })).toEqual([
        'MIRROR_PUBLICATION must be off or a name of lower-case letters, digits and "_" (at most 63)',
      ])
  })
})

describe('MIRROR_RESOURCES', () => {
  const reservation = { RESERVATION_BASE_URL: 'https://res.example.com', RESERVATION_API_KEY: 'res-key-123' }

  it('mirrors every resource of the services configured by default', () => {
    const crmOnly = parseConfig(minimal).resources
    expect(crmOnly).toContain('crm.people')
    expect(crmOnly.every((name) => name.startsWith('crm.'))).toBe(true)
    const both = parseConfig({ ...minimal, ...reservation }).resources
    expect(both).toEqual([
      ...crmOnly,
      'reservations.contacts',
      'reservations.bookings',
      'reservations.tags',
      'reservations.webforms',
    ])
  })

  it('takes qualified names and a schema with .*, in the table order, each once', () => {
    const config = parseConfig({
      ...minimal,
      ...reservation,
      MIRROR_RESOURCES: 'reservations.*, crm.deals,crm.people, crm.people',
    })
    expect(config.resources).toEqual([
      'crm.people',
      'crm.deals',
      'reservations.contacts',
      'reservations.bookings',
      'reservations.tags',
      'reservations.webforms',
    ])
  })

  it('names what is no resource, and a reservation resource without the service', () => {
    expect(
      problemsOf({ ...minimal, MIRROR_RESOURCES: 'crm.people,crm.persons,reservations.bookings' }),
    ).toEqual([
      'MIRROR_RESOURCES names "crm.persons", which is no resource: give qualified names such as crm.people, or crm.* and reservations.*, separated by commas',
      "MIRROR_RESOURCES names reservations.bookings, but no reservation service is configured (RESERVATION_BASE_URL and RESERVATION_API_KEY, or an account's reservation in ACCOUNTS_FILE)",
    ])
    expect(problemsOf({ ...minimal, MIRROR_RESOURCES: ',' })).toHaveLength(1)
  })
})

describe('variables no longer read', () => {
  it('are named in the configuration, never refused', () => {
    const config = parseConfig({ ...minimal, SYNC_LOOKBACK_SECONDS: '5', UPSTREAM_MAX_PAGES: 'not a number' })
    expect(config.removed).toEqual(['SYNC_LOOKBACK_SECONDS', 'UPSTREAM_MAX_PAGES'])
    expect(config.syncLookbackSeconds).toBe(300)
    expect(parseConfig(minimal).removed).toEqual([])
  })
})
